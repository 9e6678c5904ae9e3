#!/usr/bin/env python3
"""Reshard windows of `cairn bench scale` reports, side by side.

    docs/bench/scale_windows.py A.json [B.json ...]

Per report: rounds, reshards, the 10 s fill windows (aligned to every fill
second) inside and outside reshards against the median fill second of the
60 s before, the L0 sublevels inside, where bulk loads' tables landed, and
the fill rate by seconds after each chunk commit of the last reshard (a
commit is a second in which a load ingested tables), relative to that
reshard's median fill second: a dip right after commits is the replay's
burst; and per reshard and phase the governor's pace, what was copied
and charged to it per second, and its probes' seconds; per large chunk
commit, the fill's 20 s after against its 30 s before; the worst windows
with the WAL's and the disk's counters against the minute before. Stop 41
used it to compare ingest splits and compaction concurrency, stop 51 the
replay of what a commit releases, stop 52 the disk under the worst windows.
"""
import json
import statistics as st
import sys


def events(d):
    """The report's reshards (null in a run without one)."""
    return d.get('reshard_events') or []


def windows(d, starts=False):
    fp, ph = d['fill_puts_per_sec'], d['phase_per_sec']
    ls = d.get('lsm_per_sec') or {}
    inside = set()
    for e in events(d):
        end = e['end_sec'] or len(fp)
        inside.update(range(int(e['start_sec']), int(end) + 1))
    rows = []
    for i in range(60, len(fp) - 10):
        if not all(ph[j] == 'f' for j in range(i, i + 10)):
            continue
        pre = [fp[j] for j in range(i - 60, i) if ph[j] == 'f']
        if len(pre) < 30:
            continue
        r = (sum(fp[i:i + 10]) / 10) / st.median(pre)
        l0 = max(ls['l0_sublevels'][i:i + 10]) if ls else 0
        rows.append((any(j in inside for j in range(i, i + 10)), r, l0) + ((i,) if starts else ()))
    return rows


DISK = ('wal_sync_mean_us', 'disk_flush_mean_us', 'disk_flushes', 'disk_write_mib', 'disk_busy_ms',
        'dirty_mib', 'compacted_mib')


def worst_disk(d, n=3):
    """The n worst windows inside and outside reshards, one per 30 s, with the
    WAL's and the disk's seconds over the window against the 60 s before
    (reports since stop 52 carry the disk counters): whether the fill waited
    on a disk that was slower, or busier, than before."""
    ls = d.get('lsm_per_sec') or {}
    if 'disk_flushes' not in ls:
        return []
    out = []
    for ins in (False, True):
        picked = []
        for a, r, _, i in sorted((w for w in windows(d, True) if w[0] == ins), key=lambda w: w[1]):
            if all(abs(i - j) >= 30 for _, j, _ in picked):
                means = {k: (st.mean(ls[k][i:i + 10]), st.mean(ls[k][i - 60:i])) for k in DISK}
                picked.append((r, i, means))
            if len(picked) == n:
                break
        out += [(ins,) + p for p in picked]
    return out


def after_commits(d):
    ls, fp, ph = d.get('lsm_per_sec') or {}, d['fill_puts_per_sec'], d['phase_per_sec']
    if 'ingested_mib' not in ls or not events(d):
        return None
    e = events(d)[-1]
    s, t = int(e['start_sec']), int(e['end_sec'] or len(fp))
    commits = [i for i, a in enumerate(ls['ingested_mib']) if a > 0 and s <= i <= t]
    fills = [fp[j] for j in range(s, t) if ph[j] == 'f']
    if not commits or not fills:
        return None
    base = st.median(fills)
    rel = {}
    for c in commits:
        for k in range(-4, 30):
            j = c + k
            if 0 <= j < len(fp) and ph[j] == 'f':
                rel.setdefault(k, []).append(fp[j])
    return len(commits), {k: st.mean(v) / base for k, v in sorted(rel.items())}


def pace(d):
    """Per reshard and phase: mean pace (entries/s allowed), copied and
    charged (copy + replay) per second, seconds with a probe running."""
    ls, ph = d.get('lsm_per_sec') or {}, d['phase_per_sec']
    if 'reshard_pace' not in ls:
        return []
    out = []
    for e in events(d):
        s, t = int(e['start_sec']), int(e['end_sec'] or len(ph))
        by = {}
        for i in range(s + 1, min(t, len(ls['reshard_pace']))):
            by.setdefault(ph[i] if i < len(ph) else '-', []).append(i)
        rows = []
        for p_, ix in sorted(by.items()):
            rows.append((p_, len(ix), st.mean(ls['reshard_pace'][i] for i in ix),
                         st.mean(ls['reshard_copied'][i] for i in ix),
                         st.mean(ls['reshard_charged'][i] for i in ix),
                         sum(ls['reshard_probing'][i] for i in ix)))
        out.append((e, rows))
    return out


def commit_dips(d, big=50):
    """Per chunk commit of at least big MiB (a reshard's large chunks) inside a
    reshard, with the fill running from 30 s before to 20 s after: the fill's
    mean over the 20 s after against the 30 s before (stop 51: a commit's
    replay applied at once dipped it to 0.77-0.86, spread to 0.85-1.07)."""
    ls, fp, ph = d.get('lsm_per_sec') or {}, d['fill_puts_per_sec'], d['phase_per_sec']
    if 'ingested_mib' not in ls:
        return []
    out = []
    for t in range(30, len(fp) - 20):
        if (ls['ingested_mib'][t] or 0) < big or not all(ph[i] == 'f' for i in range(t - 30, t + 20)):
            continue
        if not any(e['start_sec'] <= t <= (e.get('end_sec') or 1e9) for e in events(d)):
            continue
        before = st.mean(fp[t - 30:t])
        if before > 0:
            out.append((t, st.mean(fp[t:t + 20]) / before))
    return out


def main():
    for f in sys.argv[1:]:
        d = json.load(open(f))
        print(f, 'objects', d['objects'], 'worst', d.get('reshard_worst_window_ratio'),
              'outside', d.get('outside_worst_window_ratio'))
        for r in d['rounds']:
            print('  round %10d shards %5d fill %6.0f rwld %6.0f' % (
                r['objects'], r['shards'], r.get('fill_puts_per_sec', 0), r.get('rwld_ops_per_sec', 0)))
        for e in events(d):
            print('  reshard %d->%d %.0f-%s s copy %.0f/s worst %s windows %s early %s mid rounds %s' % (
                e['from_shards'], e['to_shards'], e['start_sec'], round(e['end_sec']) if e['end_sec'] else 'running',
                e.get('copy_entries_per_sec', 0), e.get('worst_window_ratio'), e.get('windows'),
                e.get('early_replayed'), e.get('mid_chunk_replay_rounds')))
            if e.get('load_read_sec') is not None and e.get('end_sec'):
                print('    copy loop of %.0f s: pace wait %.0f, reads %.0f, mid rounds %.0f, commits %.0f' % (
                    e['end_sec'] - e['start_sec'], e.get('load_pace_wait_sec', 0), e.get('load_read_sec', 0),
                    e.get('load_mid_rounds_sec', 0), e.get('load_commits_sec', 0)))
        rows = windows(d)
        for ins in (False, True):
            rs = [r for a, r, _ in rows if a == ins]
            if rs:
                print('  %s windows %d mean %.3f p10 %.3f min %.3f below 0.8 %.3f' % (
                    'inside ' if ins else 'outside', len(rs), st.mean(rs), sorted(rs)[len(rs) // 10],
                    min(rs), sum(1 for r in rs if r < 0.8) / len(rs)))
        l0 = [l for a, _, l in rows if a]
        if l0:
            print('  inside: L0 sublevels (window max) mean %.1f max %d' % (st.mean(l0), max(l0)))
        ls = d.get('lsm_per_sec') or {}
        if 'ingested_mib' in ls:
            print('  loaded MiB %.0f, into L0 %.0f' % (sum(ls['ingested_mib']), sum(ls['ingested_l0_mib'])))
        lsm = (d['rounds'][-1].get('disk') or {}).get('lsm') or {}
        if lsm:
            print('  final LSM: write amp %.2f space amp %.2f loaded bytes by level %s' % (
                lsm.get('write_amp', 0), lsm.get('space_amp', 0), lsm.get('ingested_bytes_by_level')))
        for e, rows in pace(d):
            print('  pace of %d->%d by phase (f fill, r rwld, l list, a aging): %s' % (
                e['from_shards'], e['to_shards'], '; '.join(
                    '%s %d s pace %.0f copied %.0f charged %.0f probing %d s' % r for r in rows)))
        cd = commit_dips(d)
        if cd:
            print('  chunk commits of 50 MiB or more: fill 20 s after / 30 s before: mean %.3f min %.3f (%s)' % (
                st.mean(r for _, r in cd), min(r for _, r in cd), ' '.join('%d s %.2f' % c for c in cd)))
        for ins, r, i, means in worst_disk(d):
            print('  %s window at %d s: %.3f; window / 60 s before: %s' % (
                'inside ' if ins else 'outside', i, r, ', '.join(
                    '%s %.0f/%.0f' % (k, w, b) for k, (w, b) in means.items())))
        ac = after_commits(d)
        if ac:
            n, rel = ac
            print('  last reshard, %d chunk commits; fill by seconds after a commit / median:' % n)
            print('   ', ' '.join('%+d:%.2f' % (k, v) for k, v in rel.items() if k % 2 == 0))


if __name__ == '__main__':
    main()
