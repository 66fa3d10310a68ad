#!/usr/bin/env python3
"""Independent reference for the census numbers hard-coded in census_test.cpp.

Plain-Python GGUF reader (struct only, no gguf-py/numpy), written separately from the C++
reader. Run once: python3 tests/gguf/census_reference.py tests/data/golden/*.gguf
"""
import io, json, struct, sys

# ggml type id -> (name, block elements, block bytes), as ggml's type table has them.
TYPES = {0: ('F32', 1, 4), 1: ('F16', 1, 2), 2: ('Q4_0', 32, 18), 3: ('Q4_1', 32, 20),
         6: ('Q5_0', 32, 22), 7: ('Q5_1', 32, 24), 8: ('Q8_0', 32, 34), 10: ('Q2_K', 256, 84),
         11: ('Q3_K', 256, 110), 12: ('Q4_K', 256, 144), 13: ('Q5_K', 256, 176),
         14: ('Q6_K', 256, 210), 16: ('IQ2_XXS', 256, 66), 17: ('IQ2_XS', 256, 74),
         18: ('IQ3_XXS', 256, 98), 19: ('IQ1_S', 256, 50), 20: ('IQ4_NL', 32, 18),
         21: ('IQ3_S', 256, 110), 22: ('IQ2_S', 256, 82), 23: ('IQ4_XS', 256, 136),
         24: ('I8', 1, 1), 25: ('I16', 1, 2), 26: ('I32', 1, 4), 27: ('I64', 1, 8),
         28: ('F64', 1, 8), 29: ('IQ1_M', 256, 56), 30: ('BF16', 1, 2), 34: ('TQ1_0', 256, 54),
         35: ('TQ2_0', 256, 66), 39: ('MXFP4', 32, 17), 40: ('NVFP4', 64, 36),
         41: ('Q1_0', 128, 18), 42: ('Q2_0', 64, 18)}
SCALAR = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: 'B', 10: 'Q', 11: 'q', 12: 'd'}


def rd(f, fmt):
    return struct.unpack('<' + fmt, f.read(struct.calcsize('<' + fmt)))


def rstr(f):
    (n,) = rd(f, 'Q')
    return f.read(n).decode('utf-8', 'replace')


def rval(f, t):
    if t == 8:
        return rstr(f)
    if t == 9:
        (et,) = rd(f, 'I')
        (n,) = rd(f, 'Q')
        return [rval(f, et) for _ in range(n)]
    return rd(f, SCALAR[t])[0]


def census(path):
    data = open(path, 'rb').read()
    f = io.BytesIO(data)
    assert f.read(4) == b'GGUF'
    _, nt, nkv = rd(f, 'IQQ')
    kvs = {}
    for _ in range(nkv):
        k = rstr(f)
        (t,) = rd(f, 'I')
        kvs[k] = rval(f, t)
    types, tensors = {}, []
    params = nbytes_total = 0
    for _ in range(nt):
        name = rstr(f)
        (nd,) = rd(f, 'I')
        ne = list(rd(f, 'Q' * nd))
        (typ,) = rd(f, 'I')
        rd(f, 'Q')
        n = 1
        for x in ne:
            n *= x
        tname, be, bb = TYPES[typ]
        nb = n // be * bb
        e = types.setdefault(tname, [0, 0, 0])
        e[0] += 1; e[1] += nb; e[2] += n
        params += n; nbytes_total += nb
        tensors.append((name, ne, n, nb))
    arch = kvs.get('general.architecture', '')
    out = {'file': path.split('/')[-1], 'size': len(data), 'tensor_count': nt, 'kv_count': nkv,
           'params': params, 'tensor_bytes': nbytes_total,
           'types': {k: v for k, v in sorted(types.items())}}
    groups = {}
    for name, ne, n, nb in tensors:
        if '_exps' in name and name.endswith('.weight'):
            slots = ne[2] if len(ne) >= 3 else 1
            g = groups.setdefault((n // slots, slots), [0, 0])
            g[0] += 1; g[1] += nb
    out['expert_groups'] = [[g[0], k[0], k[1], g[1]] for k, g in groups.items()]
    if arch == 'kimi-k3':
        nl = kvs['kimi-k3.block_count']
        hkv = kvs.get('kimi-k3.attention.head_count_kv')
        dense = kvs.get('kimi-k3.leading_dense_block_count', 0)
        kinds = []
        for i in range(nl):
            h = hkv[i] if isinstance(hkv, list) else hkv
            kinds.append(('KDA' if h == 0 else 'MLA') + '/' + ('dense' if i < dense else 'MoE'))
        out['layers'] = kinds
    return out


if __name__ == '__main__':
    for p in sys.argv[1:]:
        print(json.dumps(census(p)))
