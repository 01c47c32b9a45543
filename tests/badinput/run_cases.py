#!/usr/bin/python3
"""The bad-input corpus: runs the cases of cases.tsv against ppsearch / ppsearch-validate.

Each case runs in a fresh private temporary folder (its working directory; every path in it
points there) and is checked for:
  * the exit code (column `exit`);
  * stderr matching the regular expression of column `stderr` (the message names the key,
    option or file);
  * no crash: no exit >= 128 or signal, no "internal error", no sanitizer report, no timeout
    (each case runs under a 20 s limit, so a FIFO or device that blocks is a failure, not a hang);
  * stderr under 100 kB (a file of 100 000 bad rows must not give 100 000 lines);
  * nothing written: the folder's listing (names, types, sizes, inode, mtime, device numbers)
    is identical before and after the run, except the names in column `writes` (which must then
    exist as regular files; used by the good-input and exit-3 cases).

Special files are made privately in the folder (mknod for character devices, mkfifo, symlinks);
no case ever names a path outside its folder.

cases.tsv: one case per line, tab-separated columns
  id  program  exit  stderr  args  setup  writes  note
  program  ppsearch | ppsearch-validate
  args     shell words (shlex); @TMP@ = the case's folder
  setup    items separated by " | ", made in order before the run:
             text:NAME:TEXT     a file with TEXT (Python escapes: \\n \\r \\t \\x00 \\xef ...)
             copy:NAME:PATH     a copy of a file of the source tree (PATH relative to the root)
             gen:NAME:KIND      a generated file: binary4k, big2mb, overlong, csv_bad_rows,
                                csv_badlayers (see GENERATORS)
             null:NAME / full:NAME / zero:NAME   character device 1:3 / 1:7 / 1:5 (mknod)
             fifo:NAME  dir:NAME  link:NAME:TARGET (symlink, TARGET as written)
             bomcopy:NAME:PATH  the same with a UTF-8 byte-order mark in front
           In texts: @HEADER@, @ROW@ (header and first row of tests/validation/runs-public.csv),
           @HEADER:old=new@ (a column renamed), @ROW:column=value@ (one field replaced).
  writes   space-separated names that the run must create (empty: nothing may change);
           NAME:h5 also checks the file with tests/e2e/h5check.py

Usage:
  run_cases.py --ppsearch BIN --validate BIN [--cases FILE] (--list | --all | ID...)
Exit: 0 all given cases passed, 1 a case failed, 77 every given case was skipped (no mknod).
"""
import argparse
import codecs
import csv
import io
import os
import random
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
H5CHECK = os.path.join(SOURCE_DIR, "tests/e2e/h5check.py")
TIMEOUT_S = 20
STDERR_LIMIT = 100_000
CRASH_PATTERNS = [
    r"internal error",
    r"AddressSanitizer",
    r"LeakSanitizer",
    r"UndefinedBehaviorSanitizer",
    r"runtime error:",
    r"terminate called",
    r"Segmentation fault",
    r"core dumped",
]


class Skip(Exception):
    pass


def runs_header():
    with open(os.path.join(SOURCE_DIR, "tests/validation/runs-public.csv"), encoding="utf-8") as f:
        return f.readline().rstrip("\r\n")


def runs_row(k=1):
    with open(os.path.join(SOURCE_DIR, "tests/validation/runs-public.csv"), encoding="utf-8") as f:
        return f.read().splitlines()[k]


def runs_fields(k=1):
    """The fields of data row k, parsed as RFC 4180 (a source text may hold quoted commas)."""
    return next(csv.reader([runs_row(k)]))


def csv_line(fields):
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(fields)
    return out.getvalue()


def gen_csv_bad_rows():
    # 100 000 rows with a non-numeric layers value each.
    header = runs_header()
    row = runs_fields()
    col = header.split(",").index("layers")
    lines = [header]
    for k in range(100_000):
        r = list(row)
        r[0] = "bad-%d" % k
        r[col] = "x"
        lines.append(csv_line(r))
    return ("\n".join(lines) + "\n").encode()


def gen_binary():
    rnd = random.Random(8)  # fixed seed: the same bytes on every run
    return bytes(rnd.randrange(256) for _ in range(4096))


GENERATORS = {
    "binary4k": gen_binary,
    # 2 MB of a valid-looking INI comment: larger than any config file should be.
    "big2mb": lambda: b"[model]\n" + (b"# " + b"x" * 97 + b"\n") * 20_000 + b"layers = 32\n",
    # one line of 1 MB (a key with an endless value)
    "overlong": lambda: b"[model]\nname = " + b"n" * 1_000_000 + b"\n",
    # an unknown key of 1 MB: the did-you-mean search and the message must stay bounded
    "overlong_key": lambda: b"[model]\n" + b"k" * 1_000_000 + b" = 1\n",
    # 200 unknown keys of 5 kB each
    "long_keys": lambda: b"[model]\n" + b"".join(
        b"k%d%s = 1\n" % (i, b"x" * 5000) for i in range(200)),
    "csv_bad_rows": gen_csv_bad_rows,
}


def expand_text(data):
    """Runs-CSV markers in a text: @HEADER@ and @ROW@ (the header and first row of
    tests/validation/runs-public.csv), @HEADER:old=new@ (a column renamed) and
    @ROW:column=value@ (the row with one field replaced)."""
    header = runs_header()
    names = header.split(",")

    def row_with(m):
        r = runs_fields()
        r[names.index(m.group(1).decode())] = "\0"
        return csv_line(r).encode().replace(b"\0", m.group(2))

    def header_with(m):
        return ",".join(m.group(2).decode() if n == m.group(1).decode() else n
                        for n in names).encode()

    data = re.sub(rb"@ROW:([a-z0-9_]+)=(.*?)@", row_with, data, flags=re.S)
    data = re.sub(rb"@HEADER:([a-z0-9_]+)=(.*?)@", header_with, data, flags=re.S)
    return data.replace(b"@HEADER@", header.encode()).replace(b"@ROW@", runs_row().encode())


def setup_item(item, tmp):
    kind, _, rest = item.partition(":")
    name, _, arg = rest.partition(":")
    path = os.path.join(tmp, name)
    if kind == "text":
        with open(path, "wb") as f:
            f.write(expand_text(codecs.escape_decode(arg.encode("utf-8"))[0]))
    elif kind == "copy":
        shutil.copyfile(os.path.join(SOURCE_DIR, arg), path)
    elif kind == "bomcopy":
        with open(os.path.join(SOURCE_DIR, arg), "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(b"\xef\xbb\xbf" + data)
    elif kind == "gen":
        with open(path, "wb") as f:
            f.write(GENERATORS[arg]())
    elif kind in ("null", "full", "zero"):
        minor = {"null": 3, "full": 7, "zero": 5}[kind]
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
        except PermissionError:
            raise Skip("mknod needs root (CAP_MKNOD)")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        os.mkdir(path)
    elif kind == "link":
        os.symlink(arg, path)
    else:
        raise ValueError("unknown setup kind %r" % kind)


def snapshot(root):
    """Every entry under root: name -> (type, size, inode, mtime, rdev) without following links."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in sorted(dirnames + filenames):
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            kind = stat.S_IFMT(st.st_mode)
            rel = os.path.relpath(p, root)
            # A folder's mtime changes with its entries, which are compared themselves.
            mtime = None if stat.S_ISDIR(st.st_mode) else st.st_mtime_ns
            info = (kind, st.st_ino, mtime, st.st_rdev)
            if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                info += (st.st_size,)
            if stat.S_ISLNK(st.st_mode):
                info += (os.readlink(p),)
            out[rel] = info
    return out


def load_cases(path):
    cases = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) < 5 or len(cols) > 8:
                sys.exit("%s:%d: %d columns, want 5 to 8" % (path, lineno, len(cols)))
            cols += [""] * (8 - len(cols))
            cid, prog, code, regex, args, setup, writes, note = cols
            if prog not in ("ppsearch", "ppsearch-validate"):
                sys.exit("%s:%d: program %r" % (path, lineno, prog))
            cases.append(dict(id=cid, prog=prog, exit=int(code), regex=regex, args=args,
                              setup=setup, writes=writes.split(), note=note, line=lineno))
    ids = [c["id"] for c in cases]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        sys.exit("%s: duplicate ids %s" % (path, dup))
    return cases


def run_case(case, bins):
    """Returns (status, lines): status 'pass', 'fail' or 'skip'."""
    problems = []
    tmp = tempfile.mkdtemp(prefix="ppsearch-badinput-")
    try:
        try:
            for item in filter(None, (s.strip() for s in case["setup"].split(" | "))):
                setup_item(item, tmp)
        except Skip as e:
            return "skip", ["skipped: %s" % e]
        args = [a.replace("@TMP@", tmp) for a in shlex.split(case["args"])]
        argv = [bins[case["prog"]]] + args
        before = snapshot(tmp)
        env = dict(os.environ, OMP_NUM_THREADS="1")
        t0 = time.monotonic()
        try:
            p = subprocess.run(argv, cwd=tmp, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=TIMEOUT_S, env=env)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = None, e.stdout or b"", e.stderr or b""
        wall = time.monotonic() - t0
        after = snapshot(tmp)
        text = err.decode("utf-8", "replace")
        if rc is None:
            problems.append("no exit within %d s (hangs?)" % TIMEOUT_S)
        elif rc < 0 or rc >= 128:
            problems.append("killed or crashed: exit %d" % rc)
        elif rc != case["exit"]:
            problems.append("exit %d, want %d" % (rc, case["exit"]))
        if case["regex"] and not re.search(case["regex"], text, re.M):
            problems.append("stderr does not match /%s/" % case["regex"])
        for pat in CRASH_PATTERNS:
            if re.search(pat, text, re.I):
                problems.append("stderr shows a crash or bug: /%s/" % pat)
        if len(err) > STDERR_LIMIT:
            problems.append("stderr has %d bytes (limit %d)" % (len(err), STDERR_LIMIT))
        written = [w.rsplit(":h5", 1)[0] for w in case["writes"]]
        allowed = set(written)
        for n in written:  # and the folders that lead to them
            while os.path.dirname(n):
                n = os.path.dirname(n)
                if n not in before:
                    allowed.add(n)
        changed = sorted(n for n in set(before) | set(after)
                         if before.get(n) != after.get(n)
                         and n not in allowed)
        if changed:
            problems.append("folder changed: %s" % ", ".join(
                "%s (%s)" % (n, "new" if n not in before else
                             "gone" if n not in after else "modified") for n in changed))
        for n, w in zip(written, case["writes"]):
            if n not in after or not stat.S_ISREG(after[n][0]):
                problems.append("%s was not written" % n)
            elif w.endswith(":h5"):
                chk = subprocess.run(["/usr/bin/python3", H5CHECK, os.path.join(tmp, n)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                if chk.returncode != 0:
                    problems.append("%s fails h5check.py: %s" % (
                        n, chk.stdout.decode("utf-8", "replace")[-500:]))
        lines = ["case %s (cases.tsv:%d): %s %s" % (case["id"], case["line"], case["prog"],
                                                     shlex.join(args).replace(tmp, "@TMP@")),
                 "  exit %s in %.2f s; stderr %d bytes" % (rc, wall, len(err))]
        if case["note"]:
            lines.append("  note: " + case["note"])
        shown = text if len(text) < 2000 else text[:2000] + "\n[... %d bytes]" % len(text)
        lines += ["  stderr: " + l for l in shown.replace(tmp, "@TMP@").splitlines()]
        lines += ["  FAILED: " + p for p in problems]
        return ("fail" if problems else "pass"), lines
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=os.path.join(HERE, "cases.tsv"))
    ap.add_argument("--ppsearch", default=os.environ.get("PPSEARCH"))
    ap.add_argument("--validate", default=os.environ.get("PPSEARCH_VALIDATE"))
    ap.add_argument("--list", action="store_true", help="print the case ids")
    ap.add_argument("--all", action="store_true", help="run every case")
    ap.add_argument("--quiet", action="store_true", help="print only failures and the summary")
    ap.add_argument("ids", nargs="*")
    a = ap.parse_args()
    cases = load_cases(a.cases)
    if a.list:
        for c in cases:
            print(c["id"])
        return 0
    if not a.ppsearch or not a.validate:
        sys.exit("need --ppsearch and --validate (or PPSEARCH, PPSEARCH_VALIDATE)")
    by_id = {c["id"]: c for c in cases}
    unknown = [i for i in a.ids if i not in by_id]
    if unknown:
        sys.exit("unknown case ids: %s" % ", ".join(unknown))
    chosen = cases if a.all else [by_id[i] for i in a.ids]
    if not chosen:
        sys.exit("no case given (ids, --all or --list)")
    bins = {"ppsearch": os.path.abspath(a.ppsearch),
            "ppsearch-validate": os.path.abspath(a.validate)}
    counts = {"pass": 0, "fail": 0, "skip": 0}
    failed = []
    for c in chosen:
        status, lines = run_case(c, bins)
        counts[status] += 1
        if status == "fail":
            failed.append(c["id"])
        if status == "fail" or not a.quiet:
            print("\n".join(lines) + "\n  => " + status.upper(), flush=True)
    print("badinput: %d passed, %d failed, %d skipped of %d" %
          (counts["pass"], counts["fail"], counts["skip"], len(chosen)))
    if failed:
        print("failed: " + " ".join(failed))
        return 1
    return 77 if counts["skip"] == len(chosen) else 0


if __name__ == "__main__":
    sys.exit(main())
