#!/usr/bin/env python3
"""Lists the command-line flags Megatron-LM's pretraining parser accepts, from the source.

Usage: extract_megatron_args.py GIT_DIR [COMMIT]  (a Megatron-LM clone; prints one flag a line)

Reads megatron/training/arguments.py with the ast module (nothing is imported or run):
every '--flag' string given to add_argument, and for each ArgumentGroupFactory(Class,
exclude=[...]) the flags that factory derives from the dataclass fields (and those of its
base classes): '--field-name', or '--no-field-name' / '--disable-field-name' for a bool that
defaults to True; argparse_meta arg_names override the derived names.
"""
import ast
import subprocess
import sys

git_dir = sys.argv[1]
commit = sys.argv[2] if len(sys.argv) > 2 else "HEAD"


def show(path):
    return subprocess.run(["git", "-C", git_dir, "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout


files = subprocess.run(["git", "-C", git_dir, "ls-tree", "-r", "--name-only", commit, "megatron/"],
                       check=True, capture_output=True, text=True).stdout.split()
files = [f for f in files if f.endswith(".py") and "/tests/" not in f]
class_index = {}  # class name -> (file, ClassDef)


def find_class(name):
    if name in class_index:
        return class_index[name]
    hits = subprocess.run(["git", "-C", git_dir, "grep", "-l", f"^class {name}\\b", commit, "--",
                           "megatron/"], capture_output=True, text=True).stdout.split()
    for h in hits:
        path = h.split(":", 1)[1]
        tree = ast.parse(show(path))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                class_index[name] = node
                return node
    class_index[name] = None
    return None


def literal_flags(node):
    return [n.value for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("--")]


def dataclass_flags(cls_name, exclude, seen=None):
    seen = seen or set()
    node = find_class(cls_name)
    if node is None or cls_name in seen:
        return []
    seen.add(cls_name)
    out = []
    for base in node.bases:
        bname = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
        if bname:
            out += dataclass_flags(bname, exclude, seen)
    for st in node.body:
        if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)):
            continue
        name = st.target.id
        ann = ast.unparse(st.annotation)
        if name in exclude or "ClassVar" in ann:
            continue
        default = st.value
        if isinstance(default, ast.Call) and ast.unparse(default.func).endswith("field"):
            kws = {k.arg: k.value for k in default.keywords}
            if "init" in kws and isinstance(kws["init"], ast.Constant) and kws["init"].value is False:
                continue
            meta = literal_flags(kws["metadata"]) if "metadata" in kws else []
            if meta:
                out += meta
                continue
            default = kws.get("default")
        dashed = "--" + name.replace("_", "-")
        if ann == "bool" and isinstance(default, ast.Constant) and default.value is True:
            out += ["--no-" + name.replace("_", "-"), "--disable-" + name.replace("_", "-")]
        else:
            out.append(dashed)
    return out


tree = ast.parse(show("megatron/training/arguments.py"))
# `exclude=NAME`: the list literal last assigned to NAME before the call.
list_assigns = {}
for n in ast.walk(tree):
    if isinstance(n, ast.Assign) and isinstance(n.value, ast.List):
        for t in n.targets:
            if isinstance(t, ast.Name):
                list_assigns.setdefault(t.id, []).append((n.lineno, n.value))
flags = set()
for n in ast.walk(tree):
    if isinstance(n, ast.Call):
        fn = ast.unparse(n.func)
        if fn.endswith("add_argument"):
            flags.update(a.value for a in n.args
                         if isinstance(a, ast.Constant) and isinstance(a.value, str)
                         and a.value.startswith("-"))
        elif fn == "ArgumentGroupFactory" and n.args:
            exclude = []
            for k in n.keywords:
                if k.arg == "exclude":
                    val = k.value
                    if isinstance(val, ast.Name):
                        earlier = [a for a in list_assigns.get(val.id, []) if a[0] < n.lineno]
                        val = max(earlier, key=lambda a: a[0])[1] if earlier else val
                    exclude = [e.value for e in ast.walk(val) if isinstance(e, ast.Constant)]
            flags.update(dataclass_flags(ast.unparse(n.args[0]), set(exclude)))
for f in sorted(flags):
    print(f)
