"""Plant known bugs one at a time and check that the tests written against each one fail.

    python tests/mutation_check.py            # every mutant (a few minutes)
    python tests/mutation_check.py -k where   # the mutants whose name contains "where"

Each mutant is one text replacement in a fresh copy of the committed tree (``git archive
HEAD``), so the working tree is never touched. The script first checks that the targeted
tests pass on the unmutated copy, then that they FAIL on each mutant. A mutant whose text is
no longer found is reported as stale (the code moved: update the mutant). Exit status 0 only
when every mutant was caught.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Mutant:
    name: str
    path: str
    old: str
    new: str
    tests: list[str]
    #: other (path, old, new) places the same bug can be planted when the code has moved
    alternatives: tuple[tuple[str, str, str], ...] = ()

    def site(self, tree: str) -> tuple[str, str, str] | None:
        """The first (path, old, new) whose text occurs exactly once in ``tree``."""
        for path, old, new in ((self.path, self.old, self.new), *self.alternatives):
            full = os.path.join(tree, path)
            if os.path.exists(full):
                with open(full) as f:
                    if f.read().count(old) == 1:
                        return path, old, new
        return None


MUTANTS = [
    Mutant(
        "gather bounds check off by one (index == size accepted)",
        "plugins/cpu/kernels.py",
        "if lo < 0 or hi >= size:",
        "if lo < 0 or hi > size:",
        ["tests/test_errors.py::test_bad_input_is_reported_clearly"],
    ),
    Mutant(
        "conformance runner ignores the per-case timeout",
        "conformance/runner.py",
        "return self.cases[i].timeout or self.timeout",
        "return self.timeout",
        ["tests/test_conformance_runner.py::test_runner_reports_each_bad_case_and_continues"],
    ),
    Mutant(
        "cpu where, >= 1024 elements: NaN in the y branch becomes 0",
        "plugins/cpu/kernels.py",
        "np.bitwise_or(zv, np.bitwise_and(np.invert(m), y.view(u)), out=zv)",
        "np.bitwise_or(zv, np.bitwise_and(np.invert(m), np.nan_to_num(y).view(u)), out=zv)",
        ["tests/test_primitives.py::test_where"],
    ),
    Mutant(
        "checks ignore NaN mismatches",
        "conformance/checks.py",
        "    bad = nan_g != nan_e\n",
        "    bad = np.zeros(nan_g.shape, bool)\n",
        ["tests/test_conformance_reference.py::test_assert_close_catches_what_it_should"],
        (("framework/testing.py", "bad = (nan_g != nan_e) | (inf_e", "bad = (nan_g & False) | (inf_e"),),
    ),
    Mutant(
        "relu turns NaN into 0",
        "framework/_src/ops/composites/activation.py",
        "return M.where(x <= 0, 0, x)",
        "return M.where(x > 0, x, 0)",
        ["tests/test_composites.py::test_relu_and_relu6_propagate_nan_in_value_and_gradient"],
    ),
    Mutant(
        "take_along_axis checks the flat index only",
        "framework/_src/ops/indexing.py",
        "    indices = checked_index(name, indices, x.shape[axis],",
        "    _ = (name, indices, x.shape[axis],",
        ["tests/test_errors.py::test_bad_input_is_reported_clearly"],
    ),
    Mutant(
        "set_state_dict loads nothing silently when no key matches",
        "framework/nn/layer.py",
        "if own and len(missing) == len(own):",
        "if False:",
        ["tests/test_nn.py::test_set_state_dict_key_mismatches_are_never_silent"],
    ),
    Mutant(
        "checkpoint checksum skipped when the format marker is damaged",
        "framework/_src/io.py",
        "ours = isinstance(meta, dict) and (any(k in meta for k in _OUR_KEYS) or",
        "ours = isinstance(meta, dict) and (meta.get('format') == FORMAT or",
        ["tests/test_checkpoint.py::test_every_single_byte_corruption_is_refused"],
    ),
    Mutant(
        "kernel cache trusts the entry's length",
        "framework/compiler/cache.py",
        "    if len(body) != n:\n",
        "    if False:\n",
        ["tests/test_compiler.py::test_a_bad_cache_entry_is_rebuilt_with_a_warning_naming_it"],
    ),
    Mutant(
        "dropout is applied in eval mode",
        "framework/_src/ops/composites/dropout.py",
        "    if not training:\n",
        "    if False:\n",
        ["tests/test_nn.py::test_train_eval_switch_dropout"],
    ),
    Mutant(
        "Layer.to leaves parameters where they were",
        "framework/nn/layer.py",
        "            r = r.to(device)\n",
        "            pass\n",
        ["tests/test_nn.py::test_to_moves_parameters_in_place_and_casts"],
    ),
    Mutant(
        "checkpoint load ignores the device asked for",
        "framework/_src/io.py",
        "dev = None if return_numpy else (_dev.get_device() if device is None else _dev.parse(device))",
        "dev = None if return_numpy else _dev.get_device()",
        ["tests/test_checkpoint.py::test_load_onto_a_named_device"],
    ),
]


def _tree(dest: str) -> None:
    """The committed tree, without the working tree's edits."""
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)


def _pytest(tree: str, tests: list[str]) -> subprocess.CompletedProcess:
    env = dict(
        os.environ, PYTHONPATH=tree + os.pathsep + os.environ.get("PYTHONPATH", ""), OARLOCK_DEVICE="cpu"
    )
    env.pop("OARLOCK_PLUGINS", None)
    with tempfile.TemporaryDirectory(prefix="oarlock-mutant-cache-") as cache:
        env["OARLOCK_CACHE_DIR"] = cache
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default="", help="only mutants whose name contains this")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTANTS if args.k.lower() in m.name.lower()]
    failures = 0
    with tempfile.TemporaryDirectory(prefix="oarlock-mutants-") as tmp:
        tree = os.path.join(tmp, "tree")
        os.mkdir(tree)
        _tree(tree)
        base = _pytest(tree, sorted({t for m in chosen for t in m.tests}))
        if base.returncode != 0:
            print("the targeted tests fail WITHOUT any mutant; fix them first:\n" + base.stdout[-3000:])
            return 2
        for m in chosen:
            site = m.site(tree)
            if site is None:
                print(
                    f"STALE   {m.name}: the text to mutate is not found once in {m.path}; update the mutant"
                )
                failures += 1
                continue
            rel, old, new = site
            path = os.path.join(tree, rel)
            with open(path) as f:
                original = f.read()
            with open(path, "w") as f:
                f.write(original.replace(old, new))
            try:
                r = _pytest(tree, m.tests)
            finally:
                with open(path, "w") as f:
                    f.write(original)
            caught = (
                r.returncode == 1
            )  # pytest: 1 = tests failed (not 2-5: usage, collection, internal errors)
            print(f"{'caught ' if caught else 'MISSED '} {m.name}  ({rel})")
            if not caught:
                failures += 1
                print("        " + (r.stdout.strip().splitlines() or ["(no output)"])[-1])
    print(f"{len(chosen) - failures} of {len(chosen)} mutants caught")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
