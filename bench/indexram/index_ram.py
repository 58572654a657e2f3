#!/usr/bin/python3
"""RAM of an index besides the raw vectors, from its structures (issue 13):
memrl's IVF-PQ file against hnswlib's saved graph.

    /usr/bin/python3 bench/indexram/index_ram.py --ivfpq DIR/ivfpq.idx --hnsw hnsw1m.bin [--json FILE]

Nothing is guessed from RSS. Both files are parsed:

memrl (ivfpq/doc.go "File format"): the header gives Dim, NList, M, Bits,
Metric and rows; the directory gives each list's length. The index holds
in RAM (mapped from the file, or decoded at Open) exactly: the coarse
centroids (NList·Dim float32) and, derived at Open, their copy in half
precision in the 8-row blocked layout and two sets of squared norms (of
the centroids and of their rounded copy), the PQ codebooks
(2^Bits·Dim float32, whatever the sub-space widths),
and per list the row ids (uint32), the codes and, for L2-scored indexes,
one term per vector (uint16 in format version 4, float32 in versions 1
to 3), each padded to 8 bytes; the directory (32 bytes a list) is read at
Open. Per-list bookkeeping in Go (slice
headers of the base and tail segments, the base bytes, checksum and
state; ivfpq/index.go) is counted from those fields' sizes. The raw
vectors are not part of it: the engine keeps them in the collection's
vectors file, which the re-rank reads.

hnswlib 0.6.2 (hnswalg.h saveIndex/loadIndex): the header gives
max_elements, cur_element_count, size_data_per_element, label_offset,
offsetData, maxM, maxM0; level 0 is one block of cur_element_count records
of size_data_per_element bytes: links (maxM0 uint32 + a uint32 count), the
vector (Dim float32) and the label (size_t); then, per element, its upper
levels' size and links (level·(maxM·4 + 4) bytes). Counted as the graph:
level-0 links, upper-level links, labels. Also reported: what loadIndex
allocates beside it for every one of max_elements (the linkLists_ pointer
array, element_levels_ as int, one std::mutex per element in
link_list_locks_, 40 bytes with glibc) and the label_lookup_ hash map
(libstdc++ unordered_map<size_t, uint32>: a 24-byte node from malloc,
32 bytes with its header, per element, and an 8-byte bucket per element
at load factor 1): sizes of the types, not measured. The float32 vectors
inside level 0 are the raw vectors and are left out.
"""
import argparse
import json
import struct

import numpy as np


def pad8(n):
    return (n + 7) & ~7


def ivfpq_bytes(path):
    with open(path, "rb") as f:
        h = f.read(128)
        if h[:8] != b"MEMRLIVF":
            raise SystemExit(f"{path}: not an ivfpq index")
        version, hsize, dim, nlist, m, bits, metric, rows = struct.unpack_from("<IIIIIIII", h, 8)
        meta_off, meta_len, dir_off, data_off, data_len = struct.unpack_from("<QQQQQ", h, 40)
        flags = struct.unpack_from("<I", h, 96)[0]
        f.seek(dir_off)
        d = np.frombuffer(f.read(32 * nlist), dtype=np.uint8).reshape(nlist, 32)
    n = d[:, 8:12].copy().view("<u4").ravel().astype(np.int64)
    assert int(n.sum()) == rows, (int(n.sum()), rows)
    l2_terms = metric == 0 or bool(flags & 1)  # Metric L2 is 0 (ivfpq/params.go); unit-norm IP flag
    ids = np.vectorize(pad8)(4 * n).sum()
    if bits == 8:
        codes = np.vectorize(pad8)(n * m).sum()
    else:  # fast-scan blocks: ceil(n/32) blocks of ceil(M/2)*32 bytes
        codes = np.vectorize(pad8)(((n + 31) // 32) * ((m + 1) // 2) * 32).sum()
    # Format version 4 stores the terms as 16-bit fixed point per list
    # (base and step in the directory entry), earlier versions as float32.
    term_bytes = 2 if version >= 4 else 4
    terms = np.vectorize(pad8)(term_bytes * n).sum() if l2_terms else 0
    ksub = 1 << bits
    centroids = 4 * nlist * dim
    # Derived at Open, not stored: the centroids again in half precision
    # in simd's 8-row blocked layout for the coarse step, and two sets of
    # squared norms (float32: the centroids' and the rounded copy's), all
    # over NList rounded up to 8 (ivfpq/index.go newIndex).
    slots = (nlist + 7) // 8 * 8
    centroids_blocked = 2 * slots * dim + 2 * 4 * slots
    books = 4 * ksub * dim  # every dimension has ksub centroid coordinates, whatever the sub-space widths
    directory = 32 * nlist
    # Go bookkeeping per list: invList{base, tail segment{ids, codes, terms,
    # terms16, grid}} = 2 x (4 slice headers of 24 B + an 8-byte grid)
    # = 208 B; baseBytes (slice header 24 B), baseSum (8 B), baseState
    # (4 B, counted 8 with alignment).
    per_list_go = 208 + 24 + 8 + 8
    out = {
        "file": path, "version": version, "dim": dim, "nlist": nlist, "pqm": m, "pqbits": bits, "rows": rows,
        "coarse_centroids": centroids, "coarse_centroids_blocked_and_norms": centroids_blocked, "pq_codebooks": books, "directory": directory,
        "row_ids": int(ids), "codes": int(codes), "l2_terms": int(terms), "l2_term_bytes": term_bytes if l2_terms else 0,
        "per_list_go_bookkeeping": per_list_go * nlist,
        "data_section_file": int(data_len), "meta_section_file": int(meta_len),
        "list_len_min": int(n.min()), "list_len_median": int(np.median(n)), "list_len_max": int(n.max()),
    }
    out["total"] = sum(out[k] for k in ("coarse_centroids", "coarse_centroids_blocked_and_norms", "pq_codebooks", "directory", "row_ids", "codes",
                                        "l2_terms", "per_list_go_bookkeeping"))
    out["bytes_per_vector"] = out["total"] / rows
    return out


def hnsw_bytes(path):
    with open(path, "rb") as f:
        hdr = f.read(96)
        (offset_level0, max_elements, cur, size_per, label_off, offset_data) = struct.unpack_from("<6Q", hdr, 0)
        maxlevel, enter = struct.unpack_from("<iI", hdr, 48)
        maxm, maxm0, m = struct.unpack_from("<3Q", hdr, 56)
        mult, efc = struct.unpack_from("<dQ", hdr, 80)
        f.seek(96 + cur * size_per)
        size_links = maxm * 4 + 4
        size_links0 = maxm0 * 4 + 4
        assert offset_data == size_links0, (offset_data, size_links0)
        upper = 0
        levels = np.zeros(cur, dtype=np.int32)
        rest = f.read()
    pos = 0
    for i in range(cur):
        sz = struct.unpack_from("<I", rest, pos)[0]
        pos += 4 + sz
        upper += sz
        levels[i] = sz // size_links
    assert pos == len(rest), (pos, len(rest))
    dim_bytes = label_off - offset_data
    links0 = cur * size_links0
    labels = cur * 8
    graph = links0 + upper + labels
    # What loadIndex allocates per element of max_elements besides the graph.
    link_ptrs = 8 * max_elements
    element_levels = 4 * max_elements
    link_locks = 40 * max_elements
    label_map = 32 * cur + 8 * cur
    out = {
        "file": path, "max_elements": max_elements, "elements": cur, "M": m, "maxM": maxm, "maxM0": maxm0,
        "ef_construction": efc, "max_level": maxlevel, "size_data_per_element": size_per,
        "vector_bytes_per_element_left_out": dim_bytes,
        "links_level0": links0, "links_upper_levels": upper, "labels": labels,
        "elements_with_upper_levels": int((levels > 0).sum()), "upper_level_slots": int(levels.sum()),
        "graph_total": graph, "graph_bytes_per_vector": graph / cur,
        "linklists_pointer_array": link_ptrs, "element_levels": element_levels,
        "link_list_locks_mutexes": link_locks, "label_lookup_map_estimate": label_map,
    }
    out["with_bookkeeping_total"] = graph + link_ptrs + element_levels + link_locks + label_map
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ivfpq", required=True, help="a memrl ivfpq.idx file")
    ap.add_argument("--hnsw", required=True, help="an hnswlib saveIndex file")
    ap.add_argument("--json")
    a = ap.parse_args()
    iv, hn = ivfpq_bytes(a.ivfpq), hnsw_bytes(a.hnsw)
    mb = 1e6
    print(f"memrl IVF{iv['nlist']},PQ{iv['pqm']}x{iv['pqbits']}, {iv['rows']} rows:")
    for k in ("coarse_centroids", "coarse_centroids_blocked_and_norms", "pq_codebooks", "directory", "row_ids", "codes", "l2_terms",
              "per_list_go_bookkeeping", "total"):
        print(f"  {k:<36} {iv[k] / mb:>9.2f} MB")
    print(f"  bytes per vector {iv['bytes_per_vector']:.1f}")
    print(f"hnswlib M={hn['M']} efC={hn['ef_construction']}, {hn['elements']} elements "
          f"({hn['elements_with_upper_levels']} with upper levels, max level {hn['max_level']}):")
    for k in ("links_level0", "links_upper_levels", "labels", "graph_total",
              "linklists_pointer_array", "element_levels", "link_list_locks_mutexes",
              "label_lookup_map_estimate", "with_bookkeeping_total"):
        print(f"  {k:<28} {hn[k] / mb:>9.2f} MB")
    print(f"  (left out: the float32 vectors in level 0, {hn['elements'] * hn['vector_bytes_per_element_left_out'] / mb:.1f} MB)")
    print(f"memrl / hnswlib graph: {iv['total'] / hn['graph_total']:.3f}; "
          f"/ graph with bookkeeping: {iv['total'] / hn['with_bookkeeping_total']:.3f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"memrl": iv, "hnswlib": hn}, f, indent=1)


if __name__ == "__main__":
    main()
