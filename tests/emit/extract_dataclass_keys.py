#!/usr/bin/env python3
"""Lists the field names of configuration dataclasses, read from the source with ast.

Usage: extract_dataclass_keys.py PREFIX GIT_DIR[,GIT_DIR...] CLASS [CLASS...]
Prints PREFIX + field name, one a line (and PREFIX + "no-" + name for a bool when PREFIX
starts with "--": tyro's flag pair), for each CLASS and its base classes (each class is
looked up by `^class NAME` in the given clones at HEAD; a nested "Outer.Inner" is followed).
Nothing is imported or run. Used to pin the NeMo (Megatron-Bridge) and torchtitan key lists
under tests/emit/.
"""
import ast
import subprocess
import sys

prefix, dirs, classes = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]


def find(name, search=None):
    outer, _, inner = name.partition(".")
    for d in search or dirs:
        hits = subprocess.run(["git", "-C", d, "grep", "-l", "-E", f"^class {outer}\\b", "HEAD", "--",
                               "*.py"], capture_output=True, text=True).stdout.split()
        for h in hits:
            if "/tests/" in h or "experiments/" in h:
                continue
            src = subprocess.run(["git", "-C", d, "show", h.replace("HEAD:", "HEAD:", 1)],
                                 capture_output=True, text=True).stdout
            for node in ast.parse(src).body:
                if isinstance(node, ast.ClassDef) and node.name == outer:
                    if not inner:
                        return node
                    for sub in node.body:
                        if isinstance(sub, ast.ClassDef) and sub.name == inner:
                            return sub
    return None


def fields(name, seen, search=None):
    # A base imported "as MCoreX" / "as MTrainX" is Megatron-LM's X (the last clone given).
    for alias in ("MCore", "MTrain"):
        if name.startswith(alias):
            name, search = name[len(alias):], dirs[-1:]
    node = find(name, search)
    if node is None or (name, tuple(search or dirs)) in seen:
        return []
    seen.add((name, tuple(search or dirs)))
    out = []
    for b in node.bases:
        out += fields(ast.unparse(b).split("[")[0], seen, search)
    for st in node.body:
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
            if "ClassVar" not in ast.unparse(st.annotation):
                out.append(st.target.id)
                # tyro (torchtitan's "--section.key" options) takes a bool as a flag pair:
                # --section.key / --section.no-key.
                if prefix.startswith("--") and ast.unparse(st.annotation) == "bool":
                    out.append("no-" + st.target.id)
    return out


keys = set()
for c in classes:
    keys.update(fields(c, set()))
for k in sorted(keys):
    print(prefix + k)
