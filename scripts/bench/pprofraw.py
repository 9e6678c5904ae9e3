"""Samples of a CPU profile with their stack's function names, from `go tool pprof -raw`
(shared by gwcpu-split.py and putcpu-split.py)."""
import re, subprocess


def parse(binary, prof):
    """[(nanoseconds, [function, ...]), ...], innermost frame first."""
    raw = subprocess.run(['go', 'tool', 'pprof', '-raw', binary, prof], capture_output=True, text=True).stdout
    lines = raw.split('\n'); i = lines.index('Samples:') + 2; samples = []
    while not lines[i].startswith('Locations'):
        m = re.match(r'\s+(\d+)\s+(\d+): ([\d ]+)', lines[i])
        if m: samples.append([int(m.group(2)), [int(x) for x in m.group(3).split()]])
        i += 1
    locs, cur = {}, None; i += 1
    while i < len(lines) and not lines[i].startswith('Mappings'):
        m = re.match(r'\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+)', lines[i])
        if m: cur = int(m.group(1)); locs[cur] = [m.group(2)]
        else:
            m = re.match(r'\s+(\S+) \S+:\d+:\d+ s=\d+$', lines[i])
            if m and cur is not None: locs[cur].append(m.group(1))
        i += 1
    return [(ns, [f for l in ids for f in locs.get(l, [])]) for ns, ids in samples]


def has(fr, *s):
    """Whether any frame of fr contains any of the strings s."""
    return any(any(x in f for x in s) for f in fr)
