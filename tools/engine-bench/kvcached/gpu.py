# SPDX-License-Identifier: GPL-2.0-only
"""The stand-in GPU: the file standin/standin.cpp keeps its budget in.

Layout (little endian, must match struct Gpu in standin.cpp): magic,
total bytes, slots used, pad; then 256 slots of eight int64: pid, bytes
held, peak, cuMemCreate, cuMemRelease, cuMemMap, cuMemUnmap, refused
cuMemCreate. Plain Python, so the driver and the static side need no
torch.
"""
import os
import struct

MAGIC = 0x6b76622d67707531
SLOTS = 256
HDR = struct.Struct('<Qqqq')
SLOT = struct.Struct('<8q')
FIELDS = ('pid', 'bytes', 'peak', 'creates', 'releases', 'maps', 'unmaps',
          'refused')


def create(path, total):
    """Make an empty GPU of total bytes (replacing any old one)."""
    tmp = path + '.new'
    with open(tmp, 'wb') as f:
        f.write(HDR.pack(MAGIC, total, 0, 0))
        f.write(b'\0' * (SLOTS * SLOT.size))
    os.replace(tmp, path)


def alive(pid):
    """Alive and not a zombie: the stand-in's rule for held bytes."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(')') + 2] != 'Z'


def read(path):
    """(total, {pid: slot dict}) as the file says now."""
    with open(path, 'rb') as f:
        data = f.read()
    magic, total, nslots, _ = HDR.unpack_from(data)
    if magic != MAGIC:
        raise ValueError(f'{path} is not a stand-in GPU file')
    slots = {}
    for i in range(nslots):
        s = dict(zip(FIELDS, SLOT.unpack_from(data, HDR.size + i * SLOT.size)))
        if s['pid']:
            s['alive'] = alive(s['pid'])
            slots[s['pid']] = s
    return total, slots


def used(path):
    """Bytes the GPU counts as taken: live processes' allocations."""
    _, slots = read(path)
    return sum(s['bytes'] for s in slots.values() if s['alive'])

