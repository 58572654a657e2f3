# Writes the commands that make N collections of PER random 16-d memories
# (usage: gen_colls.py N PER | redis-cli --pipe); see measure_colls.sh.
import sys, random, struct
n = int(sys.argv[1]); per = int(sys.argv[2]); dim = 16
r = random.Random(1)
out = sys.stdout.buffer
def cmd(*a):
    out.write(b"*%d\r\n" % len(a))
    for x in a:
        if isinstance(x, str): x = x.encode()
        out.write(b"$%d\r\n%s\r\n" % (len(x), x))
for c in range(n):
    name = "c%05d" % c
    cmd("MEM.CREATE", name, "DIM", str(dim), "INDEX", "IVFPQ", "TRAIN", "256")
    for i in range(per):
        v = struct.pack("<%df" % dim, *[r.random() for _ in range(dim)])
        cmd("MEM.ADD", name, "FP32", v)
