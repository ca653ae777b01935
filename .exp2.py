import sys, framework as fw, numpy as np
from framework import ir
T = "tensor<[3], float32, cpu>"; B = "tensor<[], bool, cpu>"
def nested(n):
    lines = [f"module @f(%0: {T}, %1: {B}) -> ({T}) {{"]
    k = 2
    def body(depth, indent):
        nonlocal k
        out = []
        r = k; k += 1
        if depth == 0:
            out.append(f"{indent}%{r} = op.exp(%0) : {T}")
            return out, r
        inner, v = body(depth-1, indent+"    ")
        out.append(f"{indent}%{r} = cf.cond(%1) : {T} {{")
        out += inner
        out.append(f"{indent}  cf.yield(%{v})")
        out.append(f"{indent}}} {{")
        out.append(f"{indent}  cf.yield(%0)")
        out.append(f"{indent}}}")
        return out, r
    b, v = body(n, "  ")
    lines += b + [f"  builtin.return(%{v})", "}"]
    return "\n".join(lines)
for n in [int(a) for a in sys.argv[1:]]:
    try:
        p = ir.parse_program(nested(n)); print(n, "parsed")
        ir.verify(p); print(n, "verified")
        ex = ir.Executor(p, fw.get_device() if False else "cpu") if False else None
        from framework.ir import Executor
        ex = Executor(p, "cpu")
        print(n, ex(fw.ones([3]), fw.to_tensor(True))[0].numpy())
    except BaseException as e:
        print(n, type(e).__name__, str(e)[:200])
