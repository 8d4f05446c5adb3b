#!/usr/bin/env python3
"""The new ABI as a program built against the old one sees it (docs/abi.md).

Structs that begin with `size_t struct_size` may grow at their end: the library reads and
writes only the fields a caller's struct_size covers. So before abidiff compares an old ABI
dump with a new one, each such struct of the new dump is cut back to the fields the old dump
has, and to its old size. A field appended at the end then disappears from the comparison;
a field inserted, removed or retyped anywhere in the old part still shows, with everything
its type reaches, and abidiff reports it as the change it is.

usage: abi-as-seen-by-old.py HEADERS_DIR OLD.abi NEW.abi OUT.abi
"""

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

# `struct gptoss_x {` followed (after comments) by `size_t struct_size;`.
VERSIONED = re.compile(r"struct\s+(gptoss_\w+)\s*\{(?:\s|/\*.*?\*/)*size_t\s+struct_size;", re.S)


def versioned_structs(headers_dir):
    names = set()
    for header in Path(headers_dir).rglob("*.h"):
        names.update(VERSIONED.findall(header.read_text()))
    return names


def struct_definitions(root, names):
    """name -> the class-decl elements that define it (not declaration-only)."""
    found = {}
    for decl in root.iter("class-decl"):
        name = decl.get("name")
        if name in names and decl.get("is-declaration-only") != "yes":
            found.setdefault(name, []).append(decl)
    return found


def main(headers_dir, old_path, new_path, out_path):
    names = versioned_structs(headers_dir)
    old = struct_definitions(ET.parse(old_path).getroot(), names)
    new_tree = ET.parse(new_path)
    for name, decls in struct_definitions(new_tree.getroot(), names).items():
        if name not in old:
            continue
        old_decl = old[name][0]
        keep = len(old_decl.findall("data-member"))
        for decl in decls:
            members = decl.findall("data-member")
            if len(members) < keep:
                continue  # fields removed: abidiff reports it
            for member in members[keep:]:
                decl.remove(member)
            decl.set("size-in-bits", old_decl.get("size-in-bits"))
    new_tree.write(out_path, encoding="unicode")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(*sys.argv[1:])
