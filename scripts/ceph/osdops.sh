# Sourced by bench.sh and roundtrips.sh (needs $run_dir: the cluster's run directory).

# osdops: cumulative client ops the OSDs served (as primaries), summed over
# the OSDs' admin sockets: "op_w op_r op_rw". Cells run one at a time, so a
# cell's difference is what its gateway (requests and background work)
# cost the cluster.
osdops() {
	local a
	for a in "$run_dir"/osd.*.asok; do
		timeout 10 ceph --admin-daemon "$a" perf dump 2>/dev/null || echo '{"osd": {}}'
	done | python3 -c '
import json, sys
dec, s, tot = json.JSONDecoder(), sys.stdin.read(), [0, 0, 0]
i = 0
while i < len(s):
    if s[i].isspace():
        i += 1
        continue
    d, i = dec.raw_decode(s, i)
    o = d.get("osd", {})
    for j, k in enumerate(("op_w", "op_r", "op_rw")):
        tot[j] += o.get(k, 0)
print(*tot)'
}
