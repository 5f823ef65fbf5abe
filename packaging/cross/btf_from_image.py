#!/usr/bin/env python3
"""Writes the raw BTF of a kernel image (Debian's /boot/vmlinuz-*: an arm64 Image, gzip-compressed
or not) to OUT, so that `bpftool btf dump file OUT format c` gives the vmlinux.h of that
architecture's kernel: rxtune's BPF programs for arm64 are compiled against arm64 types, not the
build host's.

The kernel links its BTF into the image as one blob (.BTF, between __start_BTF and __stop_BTF):
a header (magic 0xeB9F, version 1, flags, hdr_len, type_off, type_len, str_off, str_len) followed
by the type and string sections. It is found by its header: the magic where the header's lengths
describe a blob that fits, whose string section starts with the empty string, and whose last
string ends with a NUL. The largest such blob is vmlinux's (a module's BTF is not in the image).

Usage: btf_from_image.py IMAGE OUT
"""
import gzip
import struct
import sys


def image_bytes(path: str) -> bytes:
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        return gzip.decompress(data)
    # An EFI zboot image (Linux 6.1+ with CONFIG_EFI_ZBOOT) carries its payload compressed inside a
    # PE file: "zimg" at offset 4, the payload's offset and size at 8 and 12, its compression at 24.
    if data[4:8] == b"zimg":
        off, size = struct.unpack_from("<II", data, 8)
        kind = data[24:32].rstrip(b"\0").decode(errors="replace")
        if kind != "gzip":
            sys.exit(f"{path}: an EFI zboot image compressed with {kind}: only gzip is read here")
        return gzip.decompress(data[off:off + size])
    return data


def find_btf(data: bytes) -> bytes | None:
    best = None
    at = 0
    while True:
        at = data.find(b"\x9f\xeb\x01\x00", at)
        if at < 0:
            return best
        try:
            hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from("<IIIII", data, at + 4)
        except struct.error:
            return best
        end = at + hdr_len + str_off + str_len
        ok = (hdr_len == 24 and type_off == 0 and str_off == type_off + type_len and str_len > 0
              and type_len > 0 and end <= len(data)
              and data[at + hdr_len + str_off] == 0 and data[end - 1] == 0)
        if ok and (best is None or end - at > len(best)):
            best = data[at:end]
        at += 4


def main() -> int:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    image, out = sys.argv[1:]
    btf = find_btf(image_bytes(image))
    if btf is None:
        sys.exit(f"{image}: no BTF found in the kernel image (a kernel built without CONFIG_DEBUG_INFO_BTF?)")
    with open(out, "wb") as f:
        f.write(btf)
    print(f"{out}: {len(btf)} bytes of BTF from {image}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
