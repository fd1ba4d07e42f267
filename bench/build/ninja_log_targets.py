import sys, re, collections
log = sys.argv[1]
per = collections.Counter(); cnt = collections.Counter(); tus = []
seen = {}
for line in open(log):
    if line.startswith('#'): continue
    s, e, _, out, _h = line.rstrip('\n').split('\t')
    seen[out] = (int(e) - int(s)) / 1000.0   # last entry wins (rebuilds)
for out, d in seen.items():
    m = re.search(r'CMakeFiles/([^/]+)\.dir/', out)
    t = m.group(1) if m else ('link:' + out.split('/')[-1] if not out.endswith('.o') else out)
    if not m and not out.endswith(('.o',)):
        # link steps and custom commands: name by output
        t = out
    per[t] += d; cnt[t] += 1; tus.append((d, out))
total = sum(per.values())
print(f"total job-seconds {total:.0f} over {len(seen)} outputs")
for t, d in per.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 40):
    print(f"{d:8.1f} s {100*d/total:5.1f}%  {cnt[t]:3d} jobs  {t}")
