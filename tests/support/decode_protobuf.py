"""Decodes hmtt's protobuf exports with their schemas and prints them as JSON.

    decode_protobuf.py gem5 FILE
        gem5's packet trace, decoded with tests/data/gem5_packet.proto,
        compiled at run time by grpc_tools.protoc (pip: grpcio-tools) into a
        temporary directory. Prints {"header": {...}, "packets": [{...}, ...]}.
    decode_protobuf.py perfetto FILE
        A Perfetto trace, decoded as `perfetto.protos.Trace` with the
        generated module that the pip package `perfetto` ships.
        Prints {"packet": [{...}, ...]}.

Each message is printed with the fields it holds, named by the schema;
enum values are printed by name. A message that does not parse, misses a
required field or holds a field its schema does not declare is an error
(exit status 1), so the caller's assertions see only what the schema reads.
"""

import importlib
import json
import sys
import tempfile
from pathlib import Path

from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet

GEM5_PROTO = Path(__file__).resolve().parent.parent / "data" / "gem5_packet.proto"
GEM5_MAGIC = b"gem5"


def fail(why):
    print(why, file=sys.stderr)
    sys.exit(1)


def to_dict(message):
    unknown = [f.field_number for f in UnknownFieldSet(message)]
    if unknown:
        fail(f"{message.DESCRIPTOR.full_name} holds fields outside its schema: {unknown}")
    out = {}
    for field, value in message.ListFields():
        if field.type == field.TYPE_MESSAGE:
            convert = to_dict
        elif field.type == field.TYPE_ENUM:
            convert = lambda v, f=field: f.enum_type.values_by_number[v].name
        elif field.type == field.TYPE_BYTES:
            convert = bytes.hex
        else:
            convert = lambda v: v
        out[field.name] = [convert(v) for v in value] if field.is_repeated else convert(value)
    return out


def parse(message_class, data, what):
    message = message_class()
    try:
        message.ParseFromString(data)
    except DecodeError as e:
        fail(f"{what}: {e}")
    # ParseFromString accepts a proto2 message that misses a required field.
    if not message.IsInitialized():
        fail(f"{what} misses required fields: {message.FindInitializationErrors()}")
    return message


def varint(data, at):
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            fail(f"a truncated or overlong length varint at byte {at}")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def compile_gem5_schema(out_dir):
    from grpc_tools import protoc

    args = [
        "protoc",
        f"-I{GEM5_PROTO.parent}",
        f"--python_out={out_dir}",
        str(GEM5_PROTO),
    ]
    if protoc.main(args) != 0:
        fail(f"protoc failed on {GEM5_PROTO}")
    sys.path.insert(0, out_dir)
    return importlib.import_module(GEM5_PROTO.stem + "_pb2")


def decode_gem5(data):
    with tempfile.TemporaryDirectory() as out_dir:
        schema = compile_gem5_schema(out_dir)
    if data[:4] != GEM5_MAGIC:
        fail(f"the magic number is {data[:4]!r}, not {GEM5_MAGIC!r}")
    # gem5's ProtoInputStream: each message preceded by its length as a varint.
    messages = []
    at = 4
    while at < len(data):
        n, at = varint(data, at)
        if at + n > len(data):
            fail(f"message {len(messages)} runs past the end of the file")
        messages.append(data[at : at + n])
        at += n
    if not messages:
        fail("no PacketHeader")
    header = parse(schema.PacketHeader, messages[0], "PacketHeader")
    packets = [
        to_dict(parse(schema.Packet, m, f"Packet {i}"))
        for i, m in enumerate(messages[1:])
    ]
    return {"header": to_dict(header), "packets": packets}


def decode_perfetto(data):
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2

    return to_dict(parse(perfetto_trace_pb2.Trace, data, "Trace"))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("gem5", "perfetto"):
        fail(__doc__)
    data = Path(sys.argv[2]).read_bytes()
    decoded = decode_gem5(data) if sys.argv[1] == "gem5" else decode_perfetto(data)
    json.dump(decoded, sys.stdout)


if __name__ == "__main__":
    main()
