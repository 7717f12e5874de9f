"""A Cap'n Proto code generator for LuaJIT: `capnp compile -o- SCHEMA... | python3 capnpc_lua.py OUT_DIR`.

Debian's `capnp` parses the schema and writes its CodeGeneratorRequest (itself a Cap'n Proto message); its
own `capnp convert` prints that request in Cap'n Proto's text format, which `read_request` parses (no
Cap'n Proto library is needed on the Python side). This writes one Lua module a schema file,
`<name>_capnp.lua`, with a table per struct: `serialize(t)` -> string and `parse(s)` -> table, specialised
field by field (offsets, defaults, sizes are constants in the code), over the helpers in lua/capnp_rt.lua.

The Lua side of a message (the lua-capnproto post's conventions): a struct or group is a table keyed by
field name, a list an array, an enum the enumerant's name in upper case with underscores ("SELF_EMPLOYED"),
Void the string "Void", a union the table with one member set. Unlike lua-capnproto, 64-bit integers are
Lua numbers (exact below 2^53), so the same tables go through every codec of the study.

Supported: every primitive type, Text, Data, enums, structs, groups, unions, and lists of these (not lists
of lists). Refused with an error naming the field: interfaces, AnyPointer, generics, lists of lists, and
pointer fields with a default value.
"""

from __future__ import annotations

import re
import struct as pystruct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_CAPNP = "/usr/include/capnp/schema.capnp"
NO_DISCRIMINANT = 0xFFFF

# type -> (bytes, FFI pointer type in rt.types, list size code)
PRIMITIVES: dict[str, tuple[int, str, int]] = {
    "int8": (1, "i8", 2), "uint8": (1, "u8", 2), "int16": (2, "i16", 3), "uint16": (2, "u16", 3),
    "int32": (4, "i32", 4), "uint32": (4, "u32", 4), "int64": (8, "i64", 5), "uint64": (8, "u64", 5),
    "float32": (4, "f32", 4), "float64": (8, "f64", 5), "enum": (2, "u16", 3),
}
# Unsigned integer views of each size, for XOR with a default's bits.
BITS_VIEW = {1: "u8", 2: "u16", 4: "u32", 8: "u64"}


class GeneratorError(Exception):
    """A schema this generator cannot write code for, or a request it cannot read; one line, ready to print."""


# The members of schema.capnp's unions (Node, Field, Type, Value): which() names the one a value has.
UNION_MEMBERS = frozenset({
    "file", "struct", "enum", "interface", "const", "annotation", "slot", "group", "void", "bool", "int8",
    "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "text", "data",
    "list", "anyPointer"})


class Value(dict):  # type: ignore[type-arg]
    """A struct of the request: its fields as attributes, and which() member of its union it holds."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def which(self) -> str:
        members = [k for k in self if k in UNION_MEMBERS]
        if len(members) != 1:
            raise GeneratorError(f"cannot tell which member of a union is set among {sorted(self)}")
        return members[0]


_TOKEN = re.compile(r"""\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<opaque><opaque pointer>)|(?P<punct>[()\[\]=,])"""
                    r"""|(?P<word>[-+.\w]+))""")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'"}


def _unquote(text: str) -> str:
    body = text[1:-1]

    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        return chr(int(code[1:], 16)) if code[0] == "x" else _ESCAPES.get(code, code)

    return re.sub(r"\\(x[0-9a-fA-F]{2}|.)", one, body)


def _number(word: str) -> Any:
    if re.fullmatch(r"-?\d+", word):
        return int(word)
    try:
        return float(word)
    except ValueError:
        return word  # an enumerant or void / true / false


def _word(word: str) -> Any:
    return {"true": True, "false": False}.get(word, _number(word))


def parse_text(text: str) -> Any:
    """A value in Cap'n Proto's text format (what `capnp convert binary:text` prints): structs as Value,
    lists as list, strings, numbers, true/false, other words (void, enumerants) as strings."""
    tokens = []
    at = 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        m = _TOKEN.match(text, at)
        if not m:
            raise GeneratorError(f"cannot read the request's text at character {at}: {text[at:at + 30]!r}")
        tokens.append(m)
        at = m.end()
    pos = 0

    def peek() -> str:
        return tokens[pos].group().strip() if pos < len(tokens) else ""

    def take(expected: str | None = None) -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise GeneratorError("the request's text ends too early")
        got = tokens[pos].group().strip()
        if expected is not None and got != expected:
            raise GeneratorError(f"expected {expected!r} in the request's text, got {got!r}")
        pos += 1
        return got

    def value() -> Any:
        m = tokens[pos] if pos < len(tokens) else None
        if m is None:
            raise GeneratorError("the request's text ends too early")
        if m.group("string"):
            take()
            return _unquote(m.group("string"))
        if m.group("opaque"):
            take()
            return None
        if m.group("word"):
            take()
            return _word(m.group("word"))
        if peek() == "[":
            take("[")
            items = []
            while peek() != "]":
                items.append(value())
                if peek() == ",":
                    take(",")
            take("]")
            return items
        take("(")
        fields = Value()
        while peek() != ")":
            name = take()
            take("=")
            fields[name] = value()
            if peek() == ",":
                take(",")
        take(")")
        return fields

    result = value()
    if pos != len(tokens):
        raise GeneratorError(f"unexpected {peek()!r} after the request's text")
    return result


def enumerant_name(name: str) -> str:
    """selfEmployed -> SELF_EMPLOYED (the post's default)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).upper()


@dataclass
class Schema:
    """The request's nodes by id, and the Lua names given to its structs and enums."""

    nodes: dict[int, Any]
    names: dict[int, str]

    def short(self, node: Any) -> str:
        return node.displayName[node.displayNamePrefixLength:]

    def qualified(self, node: Any) -> str:
        return node.displayName.split(":", 1)[1]


def lua_ident(qualified: str) -> str:
    return "S_" + qualified.replace(".", "_")


class Emitter:
    """Lua source, line by line, with indentation."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, line: str = "") -> None:
        self.lines.append(("  " * self.depth + line) if line else "")

    def indent(self) -> None:
        self.depth += 1

    def dedent(self) -> None:
        self.depth -= 1


def fields_of(node: Any) -> list[Any]:
    """A struct node's fields; the text format leaves the list out when a struct has none."""
    return list(node.struct.get("fields", []))


def default_of(slot: Any) -> Any:
    """A slot's default as a Python value (0 / False / None when it has none)."""
    which = slot.defaultValue.which()
    if which in ("void",):
        return None
    value = getattr(slot.defaultValue, which)
    if which in ("text", "data", "list", "struct", "anyPointer"):
        if slot.hadExplicitDefault:
            raise GeneratorError("a pointer field with a default value")
        return None
    return float(value) if which in ("float32", "float64") else value


class StructWriter:
    """serialize/parse code for one struct node (its groups are written inline, into its sections)."""

    def __init__(self, schema: Schema, node: Any, out: Emitter) -> None:
        self.schema, self.node, self.out = schema, node, out
        self.dw, self.pw = node.struct.dataWordCount, node.struct.pointerCount
        self.name = schema.qualified(node)
        self.counter = 0

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def fail(self, field: Any, why: str) -> GeneratorError:
        return GeneratorError(f"{self.name}.{field.name}: {why}")

    # ---- shared helpers -------------------------------------------------------------------------------

    def fields(self, node: Any) -> list[Any]:
        return sorted(fields_of(node), key=lambda f: f.codeOrder)

    def members(self, node: Any) -> tuple[list[Any], list[Any]]:
        """(fields outside the union, union members) of a struct or group node."""
        plain = [f for f in self.fields(node) if f.discriminantValue == NO_DISCRIMINANT]
        union = [f for f in self.fields(node) if f.discriminantValue != NO_DISCRIMINANT]
        return plain, union

    def element_struct(self, typ: Any) -> Any:
        return self.schema.nodes[typ.struct.typeId]

    def enum_table(self, type_id: int) -> str:
        return "E_" + self.schema.qualified(self.schema.nodes[type_id]).replace(".", "_")

    def present_group(self, field: Any, table: str, body: Any) -> None:
        """A group's table, when the struct's table has one: `body(group node, Lua name of its table)`."""
        g = self.fresh("g")
        self.out(f"local {g} = {table}.{field.name}")
        self.out(f"if {g} ~= nil then")
        self.out.indent()
        body(self.schema.nodes[field.group.typeId], g)
        self.out.dedent()
        self.out("end")

    # ---- measure: words out of line ------------------------------------------------------------------

    def measure_fields(self, node: Any, table: str, acc: str) -> None:
        plain, union = self.members(node)
        for field in plain:
            self.measure_field(field, table, acc)
        if union:
            self.branches(union, lambda f: f"{table}.{f.name} ~= nil", lambda f: self.measure_field(f, table, acc))

    def measure_field(self, field: Any, table: str, acc: str) -> None:
        out = self.out
        if field.which() == "group":
            self.present_group(field, table, lambda group, g: self.measure_fields(group, g, acc))
            return
        typ = field.slot.type
        kind = typ.which()
        if kind not in ("text", "data", "struct", "list"):
            return
        v = self.fresh("v")
        out(f"local {v} = {table}.{field.name}")
        out(f"if {v} ~= nil then")
        out.indent()
        out(f"{acc} = {acc} + {self.measure_value(field, typ, v)}")
        out.dedent()
        out("end")

    def measure_value(self, field: Any, typ: Any, v: str) -> str:
        kind = typ.which()
        if kind == "text":
            return f"rt_text_words({v})"
        if kind == "data":
            return f"rt_data_words({v})"
        if kind == "struct":
            sub = self.element_struct(typ)
            return f"{sub.struct.dataWordCount + sub.struct.pointerCount} + {self.ident(sub)}.measure({v})"
        if kind == "list":
            return f"{self.ident_list(field, typ.list.elementType)}_measure({v})"
        raise self.fail(field, f"type {kind} is not supported")

    def branches(self, fields: list[Any], condition: Any, body: Any) -> None:
        """An if / elseif chain, one branch a union member: `condition(field)` then `body(field)`."""
        for i, field in enumerate(fields):
            self.out(("if " if i == 0 else "elseif ") + condition(field) + " then")
            self.out.indent()
            body(field)
            self.out.dedent()
        self.out("end")

    # ---- write ---------------------------------------------------------------------------------------

    def write_fields(self, node: Any, table: str) -> None:
        out = self.out
        plain, union = self.members(node)
        for field in plain:
            self.write_field(field, table)
        if union:
            offset = node.struct.discriminantOffset * 2

            def write_member(field: Any) -> None:
                if field.discriminantValue:
                    out(f"cast(T.u16, p + s + {offset})[0] = {field.discriminantValue}")
                self.write_field(field, table)

            self.branches(union, lambda f: f"{table}.{f.name} ~= nil", write_member)

    def write_field(self, field: Any, table: str) -> None:
        out = self.out
        if field.which() == "group":
            self.present_group(field, table, lambda group, g: self.write_fields(group, g))
            return
        slot = field.slot
        typ = slot.type
        kind = typ.which()
        if kind == "void":
            return
        v = self.fresh("v")
        out(f"local {v} = {table}.{field.name}")
        if kind == "bool":
            default = bool(default_of(slot))
            byte, mask = slot.offset // 8, 1 << (slot.offset % 8)
            cond = f"{v} == false" if default else f"{v}"
            out(f"if {cond} then p[s + {byte}] = bor(p[s + {byte}], {mask}) end")
            return
        if kind in PRIMITIVES:
            self.write_primitive(field, kind, v, f"p + s + {slot.offset * PRIMITIVES[kind][0]}")
            return
        at = f"s + {(self.dw * 8) + slot.offset * 8}"
        out(f"if {v} ~= nil then")
        out.indent()
        self.write_pointer(field, typ, v, at)
        out.dedent()
        out("end")

    def write_primitive(self, field: Any, kind: str, v: str, address: str) -> None:
        out = self.out
        size, view, _ = PRIMITIVES[kind]
        default = default_of(field.slot) if field.which() == "slot" else 0
        value = v
        if kind == "enum":
            table = self.enum_table(field.slot.type.enum.typeId)
            value = f'({table}[{v}] or bad_enum({v}, "{field.name}"))'
        if not default:
            out(f"if {v} ~= nil then cast(T.{view}, {address})[0] = {value} end")
            return
        bits_view = BITS_VIEW[size]
        if kind in ("float32", "float64"):
            bits_of = "rt.f32_bits" if kind == "float32" else "rt.f64_bits"
            dbits = self.float_bits(kind, default)
            out(f"if {v} ~= nil and {v} ~= {default!r} then cast(T.{bits_view}, {address})[0] = "
                f"bxor({bits_of}({v}), {dbits}) end")
            return
        dbits = self.int_bits(kind, default)
        if size == 8:
            out(f"if {v} ~= nil and {v} ~= {default!r} then cast(T.{bits_view}, {address})[0] = "
                f"bxor(cast('uint64_t', {value}), {dbits}ULL) end")
        else:
            mask = (1 << (8 * size)) - 1
            # nil is the default, whose bits XOR the default are 0: the zeroed buffer already holds them
            out(f"if {v} ~= nil then cast(T.{bits_view}, {address})[0] = band(bxor({value}, {dbits}), {mask}) end")

    @staticmethod
    def float_bits(kind: str, value: float) -> str:
        if kind == "float32":
            return str(pystruct.unpack("<I", pystruct.pack("<f", value))[0])
        return str(pystruct.unpack("<Q", pystruct.pack("<d", value))[0]) + "ULL"

    @staticmethod
    def int_bits(kind: str, value: int) -> int:
        size = PRIMITIVES[kind][0]
        return value & ((1 << (8 * size)) - 1)

    def write_pointer(self, field: Any, typ: Any, v: str, at: str) -> None:
        out = self.out
        kind = typ.which()
        if kind == "text":
            out(f"free = rt_write_text(p, {at}, free, {v})")
        elif kind == "data":
            out(f"free = rt_write_data(p, {at}, free, {v})")
        elif kind == "struct":
            sub = self.element_struct(typ)
            dw, pw = sub.struct.dataWordCount, sub.struct.pointerCount
            out(f"rt_struct_ptr(p, {at}, free, {dw}, {pw})")
            out(f"free = {self.ident(sub)}.write({v}, p, free, free + {(dw + pw) * 8})")
        elif kind == "list":
            out(f"free = {self.ident_list(field, typ.list.elementType)}_write({v}, p, {at}, free)")
        else:
            raise self.fail(field, f"type {kind} is not supported")

    # ---- read ----------------------------------------------------------------------------------------

    def read_fields(self, node: Any, table: str) -> None:
        out = self.out
        plain, union = self.members(node)
        for field in plain:
            self.read_field(field, table)
        if union:
            offset = node.struct.discriminantOffset * 2
            d = self.fresh("d")
            out(f"local {d} = dw * 8 >= {offset + 2} and cast(T.u16, p + s + {offset})[0] or 0")
            self.branches(union, lambda f: f"{d} == {f.discriminantValue}",
                          lambda f: self.read_field(f, table))

    def read_field(self, field: Any, table: str) -> None:
        out = self.out
        if field.which() == "group":
            group = self.schema.nodes[field.group.typeId]
            g = self.fresh("g")
            out(f"local {g} = {{}}")
            self.read_fields(group, g)
            out(f"{table}.{field.name} = {g}")
            return
        slot = field.slot
        typ = slot.type
        kind = typ.which()
        target = f"{table}.{field.name}"
        if kind == "void":
            out(f'{target} = "Void"')
            return
        if kind == "bool":
            default = bool(default_of(slot))
            byte, mask = slot.offset // 8, 1 << (slot.offset % 8)
            out(f"if dw * 8 > {byte} then {target} = band(p[s + {byte}], {mask}) ~= 0"
                f"{' == false' if default else ''} else {target} = {'true' if default else 'false'} end")
            return
        if kind in PRIMITIVES:
            self.read_primitive(field, kind, target)
            return
        at = f"s + dw * 8 + {slot.offset * 8}"
        guard = f"pw > {slot.offset}"
        if kind == "text":
            out(f"if {guard} then {target} = rt_read_text({at}) end")
        elif kind == "data":
            out(f"if {guard} then {target} = rt_read_data({at}) end")
        elif kind == "struct":
            sub = self.element_struct(typ)
            out(f"if {guard} then")
            out.indent()
            out(f"local ss, sdw, spw = rt_read_struct({at})")
            out(f"if ss then {target} = {self.ident(sub)}.read(p, ss, sdw, spw) end")
            out.dedent()
            out("end")
        elif kind == "list":
            out(f"if {guard} then {target} = {self.ident_list(field, typ.list.elementType)}_read(p, {at}) end")
        else:
            raise self.fail(field, f"type {kind} is not supported")

    def read_primitive(self, field: Any, kind: str, target: str) -> None:
        out = self.out
        size, view, _ = PRIMITIVES[kind]
        offset = field.slot.offset * size
        default = default_of(field.slot) or 0
        guard = f"dw * 8 >= {offset + size}"
        address = f"p + s + {offset}"
        if kind == "enum":
            table = self.enum_table(field.slot.type.enum.typeId) + "_names"
            raw = f"cast(T.u16, {address})[0]"
            value = f"bxor({raw}, {default})" if default else raw
            out(f"if {guard} then local e = {value}; {target} = {table}[e] or e else {target} = "
                f"{table}[{default}] end")
            return
        if not default:
            value = f"cast(T.{view}, {address})[0]"
            if size == 8 and kind not in ("float64",):
                value = f"tonumber({value})"
            out(f"if {guard} then {target} = {value} else {target} = 0 end")
            return
        bits_view = BITS_VIEW[size]
        raw = f"cast(T.{bits_view}, {address})[0]"
        if kind in ("float32", "float64"):
            from_bits = "rt.f32_from" if kind == "float32" else "rt.f64_from"
            value = f"{from_bits}(bxor({raw}, {self.float_bits(kind, default)}))"
        elif size == 8:
            ctype = "int64_t" if kind == "int64" else "uint64_t"
            value = f"tonumber(cast('{ctype}', bxor({raw}, {self.int_bits(kind, default)}ULL)))"
        else:
            value = f"band(bxor({raw}, {self.int_bits(kind, default)}), {(1 << (8 * size)) - 1})"
            if kind.startswith("int"):  # sign-extend the unsigned view
                half = 1 << (8 * size - 1)
                out(f"if {guard} then local u = {value}; {target} = u >= {half} and u - {2 * half} or u "
                    f"else {target} = {default!r} end")
                return
        out(f"if {guard} then {target} = {value} else {target} = {default!r} end")

    # ---- names ---------------------------------------------------------------------------------------

    def ident(self, node: Any) -> str:
        return lua_ident(self.schema.qualified(node))

    def ident_list(self, field: Any, element: Any) -> str:
        return list_ident(self.schema, element, lambda why: self.fail(field, why))

    # ---- the struct ----------------------------------------------------------------------------------

    def emit(self) -> None:
        out, ident = self.out, self.ident(self.node)
        out(f"-- {self.name}: {self.dw} data words, {self.pw} pointers")
        out(f"{ident}.words = {self.dw + self.pw}")
        out(f"function {ident}.measure(t)")
        out.indent()
        out("local n = 0")
        self.measure_fields(self.node, "t", "n")
        out("return n")
        out.dedent()
        out("end")
        out(f"function {ident}.write(t, p, s, free)")
        out.indent()
        self.write_fields(self.node, "t")
        out("return free")
        out.dedent()
        out("end")
        out(f"function {ident}.read(p, s, dw, pw)")
        out.indent()
        out("local t = {}")
        self.read_fields(self.node, "t")
        out("return t")
        out.dedent()
        out("end")
        out(f"function {ident}.serialize(t)")
        out.indent()
        out(f"local words = 1 + {self.dw + self.pw} + {ident}.measure(t)")
        out("local p = rt_buffer(8 + words * 8)")
        out("local q = p + 8")
        out(f"rt_struct_ptr(q, 0, 8, {self.dw}, {self.pw})")
        out(f"local free = {ident}.write(t, q, 8, {8 + (self.dw + self.pw) * 8})")
        out('if free ~= words * 8 then rt.fail("internal: measured " .. words * 8 .. " bytes, wrote " .. free) end')
        out("return rt_finish(p, words)")
        out.dedent()
        out("end")
        out(f"function {ident}.parse(msg)")
        out.indent()
        out("local p = rt_open(msg)")
        out("local s, dw, pw = rt_read_struct(0)")
        out(f"local t = s and {ident}.read(p, s, dw, pw) or {ident}.read(p, 0, 0, 0)")
        out("local _ = msg  -- holds the string while its bytes are read")
        out("return t")
        out.dedent()
        out("end")
        out()


def list_ident(schema: Schema, element: Any, fail: Any) -> str:
    kind = element.which()
    if kind == "struct":
        return "L_" + schema.qualified(schema.nodes[element.struct.typeId]).replace(".", "_")
    if kind == "enum":
        return "L_" + schema.qualified(schema.nodes[element.enum.typeId]).replace(".", "_")
    if kind in PRIMITIVES or kind in ("bool", "text", "data"):
        return "L_" + kind
    plural = {"list": "lists", "anyPointer": "AnyPointers", "interface": "interfaces"}.get(kind, kind)
    raise fail(f"lists of {plural} are not supported")


def emit_list(schema: Schema, element: Any, out: Emitter) -> None:
    """measure/write/read of one list type (element kind), as local functions."""
    name = list_ident(schema, element, GeneratorError)
    kind = element.which()
    out(f"-- {name}")
    if kind == "struct":
        sub = schema.nodes[element.struct.typeId]
        dw, pw = sub.struct.dataWordCount, sub.struct.pointerCount
        ident = lua_ident(schema.qualified(sub))
        out(f"function {name}_measure(v)")
        out(f"  local n = 1 + #v * {dw + pw}")
        out(f"  for i = 1, #v do n = n + {ident}.measure(v[i]) end")
        out("  return n")
        out("end")
        out(f"function {name}_write(v, p, at, free)")
        out("  local n = #v")
        out(f"  rt_list_ptr(p, at, free, 7, n * {dw + pw})")
        out(f"  rt_list_tag(p, free, n, {dw}, {pw})")
        out("  local e = free + 8")
        out(f"  free = e + n * {(dw + pw) * 8}")
        out(f"  for i = 1, n do free = {ident}.write(v[i], p, e + (i - 1) * {(dw + pw) * 8}, free) end")
        out("  return free")
        out("end")
        out(f"function {name}_read(p, at)")
        out("  local e, n, dw, pw = rt_read_struct_list(at)")
        out("  if e == nil then return nil end")
        out("  local t, step = {}, (dw + pw) * 8")
        out(f"  for i = 1, n do t[i] = {ident}.read(p, e + (i - 1) * step, dw, pw) end")
        out("  return t")
        out("end")
        return
    if kind in ("text", "data"):
        out(f"function {name}_measure(v)")
        out("  local n = #v")
        out(f"  for i = 1, #v do n = n + rt_{kind}_words(v[i]) end")
        out("  return n")
        out("end")
        out(f"function {name}_write(v, p, at, free)")
        out("  local n = #v")
        out("  rt_list_ptr(p, at, free, 6, n)")
        out("  local e = free")
        out("  free = free + n * 8")
        out(f"  for i = 1, n do free = rt_write_{kind}(p, e + (i - 1) * 8, free, v[i]) end")
        out("  return free")
        out("end")
        out(f"function {name}_read(p, at)")
        out("  local e, n = rt.read_list(at, 6)")
        out("  if e == nil then return nil end")
        out("  local t = {}")
        out(f"  for i = 1, n do t[i] = rt_read_{kind}(e + (i - 1) * 8) end")
        out("  return t")
        out("end")
        return
    if kind == "bool":
        out(f"function {name}_measure(v) return rt.bytes_words(rshift(#v + 7, 3)) end")
        out(f"function {name}_write(v, p, at, free)")
        out("  local n = #v")
        out("  rt_list_ptr(p, at, free, 1, n)")
        out("  for i = 1, n do if v[i] then local b = free + rshift(i - 1, 3); "
            "p[b] = bor(p[b], lshift(1, band(i - 1, 7))) end end")
        out("  return free + rt.bytes_words(rshift(n + 7, 3)) * 8")
        out("end")
        out(f"function {name}_read(p, at)")
        out("  local e, n = rt.read_list(at, 1)")
        out("  if e == nil then return nil end")
        out("  local t = {}")
        out("  for i = 1, n do t[i] = band(p[e + rshift(i - 1, 3)], lshift(1, band(i - 1, 7))) ~= 0 end")
        out("  return t")
        out("end")
        return
    size, view, code = PRIMITIVES["enum" if kind == "enum" else kind]
    to_wire, from_wire = "x", "x"
    if kind == "enum":
        table = "E_" + schema.qualified(schema.nodes[element.enum.typeId]).replace(".", "_")
        to_wire = f'({table}[x] or bad_enum(x, "list element"))'
        from_wire = f"({table}_names[x] or x)"
    elif size == 8 and kind != "float64":
        from_wire = "tonumber(x)"
    out(f"function {name}_measure(v) return rt.bytes_words(#v * {size}) end")
    out(f"function {name}_write(v, p, at, free)")
    out("  local n = #v")
    out(f"  rt_list_ptr(p, at, free, {code}, n)")
    out(f"  local a = cast(T.{view}, p + free)")
    out(f"  for i = 1, n do local x = v[i]; a[i - 1] = {to_wire} end")
    out(f"  return free + rt.bytes_words(n * {size}) * 8")
    out("end")
    out(f"function {name}_read(p, at)")
    out(f"  local e, n = rt.read_list(at, {code})")
    out("  if e == nil then return nil end")
    out(f"  local a, t = cast(T.{view}, p + e), {{}}")
    out(f"  for i = 1, n do local x = a[i - 1]; t[i] = {from_wire} end")
    out("  return t")
    out("end")


def lists_used(schema: Schema, structs: list[Any]) -> list[Any]:
    """Every list element type a field of these structs (or their groups) uses, once each."""
    seen: dict[str, Any] = {}

    def visit(node: Any) -> None:
        for field in fields_of(node):
            if field.which() == "group":
                visit(schema.nodes[field.group.typeId])
            elif field.slot.type.which() == "list":
                element = field.slot.type.list.elementType
                name = list_ident(schema, element,
                                  lambda why, f=field: GeneratorError(f"{schema.qualified(node)}.{f.name}: {why}"))
                seen.setdefault(name, element)

    for node in structs:
        visit(node)
    return list(seen.values())


def generate(schema: Schema, file_node: Any) -> str:
    """The Lua module of one schema file."""
    prefix = file_node.displayName + ":"
    mine = [n for n in schema.nodes.values() if n.displayName.startswith(prefix)]
    for node in mine:
        if node.isGeneric:
            raise GeneratorError(f"{schema.qualified(node)}: generic types are not supported")
        if node.which() == "interface":
            raise GeneratorError(f"{schema.qualified(node)}: interfaces are not supported")
        for field in fields_of(node) if node.which() == "struct" else ():
            if (field.which() == "slot" and field.slot.hadExplicitDefault
                    and field.slot.type.which() in ("text", "data", "list", "struct", "anyPointer")):
                raise GeneratorError(f"{schema.qualified(node)}.{field.name}: a pointer field with a default value "
                                     "is not supported")
    structs = sorted((n for n in mine if n.which() == "struct" and not n.struct.isGroup),
                     key=lambda n: n.displayName)
    enums = sorted((n for n in mine if n.which() == "enum"), key=lambda n: n.displayName)
    # Structs of other files that fields point to are refused: one module a file, no imports.
    out = Emitter()
    out(f"-- Generated by studies/serialize/capnpc_lua.py from {file_node.displayName}; do not edit.")
    out("-- LuaJIT only. M.<Struct>.serialize(t) -> string, M.<Struct>.parse(s) -> table.")
    out('local ffi = require("ffi")')
    out('local bit = require("bit")')
    out('local rt = require("capnp_rt")')
    out("local cast, T = ffi.cast, rt.types")
    out("local band, bor, bxor, lshift, rshift = bit.band, bit.bor, bit.bxor, bit.lshift, bit.rshift")
    out("local rt_buffer, rt_finish, rt_open = rt.buffer, rt.finish, rt.open")
    out("local rt_struct_ptr, rt_list_ptr, rt_list_tag = rt.struct_ptr, rt.list_ptr, rt.list_tag")
    out("local rt_write_text, rt_write_data, rt_text_words, rt_data_words = rt.write_text, rt.write_data, "
        "rt.text_words, rt.data_words")
    out("local rt_read_struct, rt_read_struct_list, rt_read_text, rt_read_data = rt.read_struct, "
        "rt.read_struct_list, rt.read_text, rt.read_data")
    out("local function bad_enum(v, what)")
    out('  rt.fail("unknown enumerant " .. tostring(v) .. " for " .. what)')
    out("end")
    out("local M = {}")
    out()
    for node in enums:
        ident = "E_" + schema.qualified(node).replace(".", "_")
        pairs = ", ".join(f"{enumerant_name(e.name)} = {i}" for i, e in enumerate(node.enum.enumerants))
        names = ", ".join(f'[{i}] = "{enumerant_name(e.name)}"' for i, e in enumerate(node.enum.enumerants))
        out(f"local {ident} = {{{pairs}}}")
        out(f"local {ident}_names = {{{names}}}")
    for node in structs:
        out(f"local {lua_ident(schema.qualified(node))} = {{}}")
    elements = lists_used(schema, structs)
    for element in elements:
        name = list_ident(schema, element, GeneratorError)
        out(f"local {name}_measure, {name}_write, {name}_read")
    out()
    for node in structs:
        for field in fields_of(node):
            if field.which() == "slot" and field.slot.type.which() == "struct":
                target = schema.nodes[field.slot.type.struct.typeId]
                if not target.displayName.startswith(prefix):
                    raise GeneratorError(f"{schema.qualified(node)}.{field.name}: a struct of another file")
        StructWriter(schema, node, out).emit()
    for element in elements:
        emit_list(schema, element, out)
        out()
    # The module's tables, nested as the schema nests them: M.Person.PhoneNumber, M.Person.PhoneNumber.Type.
    for node in structs + enums:
        path = schema.qualified(node).split(".")
        for depth in range(1, len(path)):
            parent = "M." + ".".join(path[:depth])
            out(f"{parent} = {parent} or {{}}")
        target = "M." + ".".join(path)
        if node.which() == "struct":
            out(f"{target} = {lua_ident(schema.qualified(node))}")
        else:
            out(f"{target} = E_{schema.qualified(node).replace('.', '_')}")
    out("return M")
    return "\n".join(out.lines) + "\n"


def read_request(binary: bytes) -> Any:
    """The CodeGeneratorRequest `capnp compile -o-` wrote, as Debian's capnp prints it in text."""
    try:
        done = subprocess.run(["capnp", "convert", "binary:text", SCHEMA_CAPNP, "CodeGeneratorRequest"],
                              input=binary, capture_output=True, timeout=120)
    except FileNotFoundError:
        raise GeneratorError("capnp is not installed (Debian package capnproto)") from None
    if done.returncode != 0:
        why = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[0]
        raise GeneratorError(f"capnp cannot read the CodeGeneratorRequest on standard input: {why}")
    return parse_text(done.stdout.decode())


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: capnp compile -o- SCHEMA... | python capnpc_lua.py OUT_DIR", file=sys.stderr)
        return 2
    out_dir = Path(argv[1])
    try:
        request = read_request(sys.stdin.buffer.read())
        nodes = {n.id: n for n in request.nodes}
        schema = Schema(nodes=nodes, names={})
        for requested in request.requestedFiles:
            file_node = nodes[requested.id]
            text = generate(schema, file_node)
            name = Path(requested.filename).name.removesuffix(".capnp") + "_capnp.lua"
            out_dir.mkdir(parents=True, exist_ok=True)
            (out_dir / name).write_text(text)
    except GeneratorError as e:
        print(f"capnpc_lua: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
