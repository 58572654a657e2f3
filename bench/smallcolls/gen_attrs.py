# Writes the commands that add N memories with 5-tag array attributes
# (usage: gen_attrs.py N INDEXED | redis-cli --pipe); see measure_attrs.sh.
import sys, random, struct
n = int(sys.argv[1]); indexed = sys.argv[2] == "1"; dim = 16
r = random.Random(3)
out = sys.stdout.buffer
def cmd(*a):
    out.write(b"*%d\r\n" % len(a))
    for x in a:
        if isinstance(x, str): x = x.encode()
        out.write(b"$%d\r\n%s\r\n" % (len(x), x))
args = ["MEM.CREATE", "a", "DIM", str(dim), "INDEX", "FLAT"]
if indexed: args += ["INDEXED", "tags"]
cmd(*args)
raw = 0
for i in range(n):
    v = struct.pack("<%df" % dim, *[r.random() for _ in range(dim)])
    tags = ",".join('"t%d"' % r.randrange(1000000) for _ in range(5))
    a = '{"tags":[%s]}' % tags
    raw += len(a)
    cmd("MEM.ADD", "a", "FP32", v, "ATTRS", a)
sys.stderr.write("attr bytes %d\n" % raw)
