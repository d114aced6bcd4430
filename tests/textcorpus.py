"""A seeded corpus of real-looking text files and of the edits they get, for line-count tests.

Each kind is made to resemble a file type whose diffs are hard for a line differ:
kernel-like C (many ``}``, blank and ``break;`` lines, renamed identifiers, moved
functions), gettext ``.po`` catalogues (``#:`` references renumbered on every
update, so changed lines match other lines), generated parsers (number tables
regenerated, ``case N:`` renumbered), minified JavaScript (a few huge lines) and
CSV (unique rows edited in place, repeated rows). Everything comes from
``random.Random(seed)``: the same call gives the same bytes on every machine.

Used by tests/test_linediff_git.py (git as the oracle) and benchmarks/bench_linediff.py.
"""

from __future__ import annotations

import random
from collections.abc import Callable

_WORD_TEXT = (
    "buf len ret err dev ctx node list head next prev flags count size offset index data "
    "page lock state mode addr entry item value key table hash name path file inode block"
)
WORDS = _WORD_TEXT.split()
SOURCES = ["builtin/add.c", "builtin/commit.c", "diff.c", "sequencer.c", "remote.c", "refs.c", "config.c"]
PHRASES = (
    "could not read",
    "unable to write",
    "invalid option",
    "no such file",
    "the index",
    "working tree",
    "commit message",
    "remote branch",
    "upstream",
    "merge conflict",
    "nothing to commit",
    "cannot lock ref",
    "bad object",
    "too many arguments",
    "use --force",
)


def _ident(rng: random.Random) -> str:
    return f"{rng.choice(WORDS)}_{rng.choice(WORDS)}"


def _statement(rng: random.Random, names: list[str], depth: int) -> list[str]:
    tab = "\t" * depth
    a, b = rng.choice(names), rng.choice(names)
    roll = rng.random()
    if roll < 0.25:
        return [f"{tab}{a} = {b} + {rng.randrange(16)};"]
    if roll < 0.4:
        return [f"{tab}if ({a} < 0)", f"{tab}\treturn {a};"]
    if roll < 0.55 and depth < 3:
        inner = [line for _ in range(rng.randint(1, 3)) for line in _statement(rng, names, depth + 1)]
        return [f"{tab}if ({a} && {b}) {{", *inner, f"{tab}}}"]
    if roll < 0.65 and depth < 3:
        inner = [line for _ in range(rng.randint(1, 3)) for line in _statement(rng, names, depth + 1)]
        return [f"{tab}for (i = 0; i < {a}; i++) {{", *inner, f"{tab}}}"]
    if roll < 0.75:
        cases = []
        for value in rng.sample(range(12), rng.randint(2, 4)):
            cases += [f"{tab}case {value}:", f"{tab}\t{a} = {b};", f"{tab}\tbreak;"]
        return [f"{tab}switch ({a}) {{", *cases, f"{tab}}}"]
    if roll < 0.85:
        return [f"{tab}ret = {rng.choice(WORDS)}_{rng.choice(WORDS)}({a}, {b});", f"{tab}if (ret)", f"{tab}\tgoto out;"]
    if roll < 0.92:
        return [""]
    return [f"{tab}/* {' '.join(rng.choice(WORDS) for _ in range(rng.randint(3, 8)))} */"]


def _function(rng: random.Random) -> list[str]:
    names = [_ident(rng) for _ in range(4)]
    body = [f"\tint {', '.join(names)};", "\tint i, ret = 0;", ""]
    for _ in range(rng.randint(3, 14)):
        body += _statement(rng, names, 1)
    return [
        f"static int {_ident(rng)}_{rng.randrange(1000)}(struct {rng.choice(WORDS)} *p)",
        "{",
        *body,
        "out:",
        "\treturn ret;",
        "}",
        "",
    ]


def c_source(rng: random.Random, lines: int) -> list[str]:
    """Kernel-like C: a licence comment, includes, then functions."""
    out = ["// SPDX-License-Identifier: GPL-2.0", "/*", " * generated for tests", " */", ""]
    out += [f"#include <linux/{rng.choice(WORDS)}.h>" for _ in range(8)] + [""]
    while len(out) < lines:
        out += _function(rng)
    return out


def c_edit(rng: random.Random, old: list[str], fraction: float) -> list[str]:
    """Rewrite, add, drop, move and re-indent functions; rename an identifier everywhere."""
    starts = [i for i, line in enumerate(old) if line.startswith("static int ")] + [len(old)]
    funcs = [old[: starts[0]]] + [old[s:e] for s, e in zip(starts, starts[1:])]
    budget = int(len(old) * fraction * 2.3)
    word = rng.choice(WORDS)
    renamed = 0
    while budget > 0:
        k = rng.randrange(1, len(funcs))
        roll = rng.random()
        if roll < 0.35:  # rewrite part of a body
            body = funcs[k]
            lo = rng.randrange(2, max(3, len(body) - 3))
            hi = min(len(body) - 3, lo + rng.randint(2, 10))
            names = [_ident(rng) for _ in range(4)]
            new = [line for _ in range(rng.randint(1, 4)) for line in _statement(rng, names, 1)]
            funcs[k] = body[:lo] + new + body[hi:]
            budget -= max(hi - lo, len(new))
        elif roll < 0.5:
            new_func = _function(rng)
            funcs.insert(k, new_func)
            budget -= len(new_func)
        elif roll < 0.6 and len(funcs) > 3:
            budget -= len(funcs.pop(k))
        elif roll < 0.75:  # move a function elsewhere
            func = funcs.pop(k)
            funcs.insert(rng.randrange(1, len(funcs) + 1), func)
            budget -= len(func)
        elif roll < 0.9:  # indent a body one level (wrapped in a new block)
            body = funcs[k]
            inner = ["\t" + line if line else "" for line in body[2:-3]]
            funcs[k] = body[:2] + ["\tif (p) {"] + inner + ["\t}"] + body[-3:]
            budget -= len(inner)
        elif renamed < 2:  # rename an identifier across the file
            renamed += 1
            fresh = word + "_new"
            before = sum(len(f) for f in funcs)
            funcs = [[line.replace(word, fresh) for line in f] for f in funcs]
            budget -= before // 10
    return [line for f in funcs for line in f]


def _po_string(rng: random.Random) -> str:
    return " ".join(rng.choice(PHRASES) for _ in range(rng.randint(1, 4)))


def _po_entry(rng: random.Random) -> list[str]:
    refs = " ".join(f"{rng.choice(SOURCES)}:{rng.randrange(1, 3000)}" for _ in range(rng.randint(1, 3)))
    entry = [f"#: {refs}"]
    if rng.random() < 0.3:
        entry.append("#, c-format")
    msgid = _po_string(rng)
    if rng.random() < 0.2:
        entry += [
            'msgid ""',
            f'"{msgid}\\n"',
            f'"{_po_string(rng)}"',
            'msgstr ""',
            f'"{msgid.upper()}\\n"',
            f'"{_po_string(rng).upper()}"',
        ]
    else:
        entry += [f'msgid "{msgid}"', f'msgstr "{msgid.upper()}"' if rng.random() < 0.9 else 'msgstr ""']
    return [*entry, ""]


def po_catalogue(rng: random.Random, lines: int) -> list[str]:
    """A gettext catalogue: a header entry, then entries separated by blank lines."""
    out = ['msgid ""', 'msgstr ""', '"Content-Type: text/plain; charset=UTF-8\\n"', ""]
    while len(out) < lines:
        out += _po_entry(rng)
    return out


def po_edit(rng: random.Random, old: list[str], fraction: float) -> list[str]:
    """A catalogue update, entry by entry: source references renumbered, strings
    re-translated or re-wrapped over several lines, entries dropped and added."""
    shift = {src: rng.randrange(-40, 40) for src in SOURCES}
    entries: list[list[str]] = [[]]
    for line in old:
        entries[-1].append(line)
        if line == "":
            entries.append([])
    out: list[str] = list(entries[0])
    for entry in entries[1:]:
        roll = rng.random()
        if roll < fraction * 0.15:
            continue  # obsolete: dropped
        if roll < fraction * 0.3:
            out += _po_entry(rng)  # a new entry in its place
        changed = []
        for line in entry:
            if line.startswith("#: ") and rng.random() < min(1.0, fraction * 2):
                refs = [ref.rsplit(":", 1) for ref in line[3:].split()]
                line = "#: " + " ".join(f"{src}:{max(1, int(n) + shift[src])}" for src, n in refs)
            elif line.startswith('msgstr "') and len(line) > 9 and rng.random() < fraction:
                words = line[8:-1].split()
                half = max(1, len(words) // 2)
                changed += ['msgstr ""', f'"{" ".join(words[:half])} "', f'"{" ".join(words[half:])}"']
                continue
            changed.append(line)
        out += changed
    return out


def parser_source(rng: random.Random, lines: int) -> list[str]:
    """A generated LALR parser: number tables, then a switch of numbered rule actions."""
    out = ["/* A Bison parser, made by GNU Bison 3.8.2.  */", "", "#define YYFINAL  42", ""]
    table_rows = lines // 3
    for name in ("yytable", "yycheck", "yypact", "yydefact"):
        out += [f"static const yytype_int16 {name}[] =", "{"]
        for _ in range(table_rows // 4):
            out.append("  " + ", ".join(f"{_table_number(rng):5d}" for _ in range(10)) + ",")
        out += ["};", ""]
    rule = 1
    out += ["  switch (yyn)", "    {"]
    while len(out) < lines:
        out += _rule_action(rule, rng)
        rule += 1
    out += ["      default: break;", "    }"]
    return out


def _table_number(rng: random.Random) -> int:
    roll = rng.random()
    return 0 if roll < 0.3 else -1 if roll < 0.4 else rng.randrange(1, 600)


def _rule_action(rule: int, rng: random.Random) -> list[str]:
    return [
        f"  case {rule}: /* {rng.choice(WORDS)}: {rng.choice(WORDS)} {rng.choice(WORDS)}  */",
        f'#line {rule * 7 + 100} "parser.y"',
        f"    {{ (yyval.node) = make_{rng.choice(WORDS)}(yyvsp[-1]); }}",
        "    break;",
        "",
    ]


def parser_edit(rng: random.Random, old: list[str], fraction: float) -> list[str]:
    """The grammar gained rules: table rows regenerated, later rules renumbered."""
    out: list[str] = []
    shift = rng.randint(1, 5)
    from_rule = None
    for line in old:
        if line.startswith("  ") and line.endswith(",") and rng.random() < fraction:
            line = "  " + ", ".join(f"{_table_number(rng):5d}" for _ in range(10)) + ","
        elif line.startswith("  case "):
            rule = int(line.split()[1].rstrip(":"))
            if from_rule is None and rng.random() < fraction / 30:
                from_rule = rule
                out += _rule_action(rule, rng)
            if from_rule is not None:
                line = line.replace(f"case {rule}:", f"case {rule + shift}:")
        elif line.startswith("#line ") and from_rule is not None:
            number = int(line.split()[1])
            line = f'#line {number + 7 * shift} "parser.y"'
        out.append(line)
    return out


def minified_js(rng: random.Random, lines: int) -> list[str]:
    """A bundle: one long minified line per module (several KB each)."""
    out = []
    for k in range(lines):
        body = ";".join(f"var {_ident(rng)}=function(e,t){{return e+t*{rng.randrange(99)}}}" for _ in range(40))
        out.append(f"/*{k}*/!function(){{{body}}}();")
    return out


def js_edit(rng: random.Random, old: list[str], fraction: float) -> list[str]:
    return [line.replace("e+t", "t+e") if rng.random() < fraction else line for line in old]


def csv_rows(rng: random.Random, lines: int) -> list[str]:
    """A table export: a header, then rows of which a good share repeat exactly."""
    out = ["date,store,product,quantity,price"]
    for _ in range(lines - 1):
        if rng.random() < 0.3:
            out.append(f"2024-01-0{rng.randrange(1, 4)},store_1,product_{rng.randrange(5)},1,9.99")
        else:
            out.append(
                f"2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d},store_{rng.randrange(40)},"
                f"product_{rng.randrange(900)},{rng.randrange(1, 20)},{rng.randrange(100, 9999) / 100}"
            )
    return out


def csv_edit(rng: random.Random, old: list[str], fraction: float) -> list[str]:
    out = [old[0]]
    for line in old[1:]:
        roll = rng.random()
        if roll < fraction * 0.85:
            fields = line.split(",")
            fields[3] = str(rng.randrange(1, 20))
            out.append(",".join(fields))
        elif roll < fraction * 1.0:
            continue
        else:
            out.append(line)
            if roll > 1 - fraction * 0.2:
                out.append(line)  # a duplicated row
    return out


KINDS: dict[str, tuple[str, Callable[[random.Random, int], list[str]], Callable[..., list[str]]]] = {
    "c": (".c", c_source, c_edit),
    "po": (".po", po_catalogue, po_edit),
    "parser": (".tab.c", parser_source, parser_edit),
    "js": (".min.js", minified_js, js_edit),
    "csv": (".csv", csv_rows, csv_edit),
}


def text_pair(kind: str, lines: int, fraction: float, seed: int, *, crlf: bool = False) -> tuple[bytes, bytes]:
    """(old, new) contents of one file of ``kind``: about ``lines`` lines, about
    ``fraction`` of them changed; CRLF line ends if asked; the last line keeps its newline."""
    rng = random.Random(f"{kind}-{lines}-{fraction}-{seed}")
    _, make, edit = KINDS[kind]
    old = make(rng, lines)
    new = edit(rng, old, fraction)
    end = "\r\n" if crlf else "\n"
    return (end.join(old) + end).encode(), (end.join(new) + end).encode()
