import framework as fw, json, numpy as np, os, tempfile
d = tempfile.mkdtemp()
def raw_st(header, data=b""):
    js = json.dumps(header).encode()
    return len(js).to_bytes(8,"little")+js+data
for shape in ([2**62, 0], [0, 2**70], [2**64, 2**64, 0], [-0, 2**63]):
    p = os.path.join(d, "x.st")
    open(p,"wb").write(raw_st({"t":{"dtype":"F32","shape":shape,"data_offsets":[0,0]}}))
    try: print(shape, fw.load(p)["t"].shape)
    except Exception as e: print(shape, type(e).__name__, str(e)[:200])
for f in [lambda: fw.zeros([0, 2**62]), lambda: fw.to_tensor(2**70), lambda: fw.tile(fw.ones([2]), [2**62, 2**62])]:
    try: print(f())
    except Exception as e: print(type(e).__name__, str(e)[:300])
