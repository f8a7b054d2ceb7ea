"""Peer timings for `sort-bench`: torch.sort (CUB radix sort of pairs: keys + int64 indices),
cupy.argsort (int64 indices of the sorted keys, for the u32 -> u64 pairs row), cupy.sort
(a copy, then CUB onesweep, keys only) and cupy.ndarray.sort (in place, no copy), timed with
CUDA events like the Rust side (warm-up, then the best of five trials of the mean over enough
repetitions to take >= 20 ms). Every call sorts the same random keys: the in-place sort gets
them back before each call, untimed (`timing.Fresh`); timed back to back it would re-sort its
own sorted output, an easier input for a radix sort.
Prints JSON {case: {peer: {size: microseconds}}}. Run on the GPU machine in the same call as
the bench: `python3 benches/peers/sort.py > sort_peers.json`."""
import json

import torch

from timing import Fresh, Results, sizes

try:
    import cupy
except Exception:  # cupy is optional
    cupy = None

SIZES = sizes(28)


def main():
    out = Results(SIZES)
    add = out.add
    gen = torch.Generator(device="cuda").manual_seed(1)

    def keys(n, dtype):
        if dtype in (torch.float32, torch.float64):
            return torch.randn(n, device="cuda", generator=gen, dtype=dtype)
        if dtype == torch.int64:  # the whole int64 range, as the Rust side's keys
            halves = torch.randint(-(2**31), 2**31, (2, n), device="cuda", generator=gen,
                                   dtype=torch.int64)
            return (halves[0] << 32) | (halves[1] & 0xFFFFFFFF)
        return torch.randint(-(2**31), 2**31 - 1, (n,), device="cuda", generator=gen,
                             dtype=torch.int64).to(dtype)

    def torch_sort(dtype):
        def make(n):
            x = keys(n, dtype)
            return lambda: torch.sort(x)  # values + int64 indices (CUB SortPairs)
        return make

    for case in ("sort_pairs_u32_u64", "sort_pairs_u32_u32", "sort_keys_u32"):
        add(case, "torch.sort", torch_sort(torch.int32))
    add("sort_keys_f32", "torch.sort", torch_sort(torch.float32))
    for case in ("sort_keys_i64", "sort_pairs_i64_u64"):
        add(case, "torch.sort", torch_sort(torch.int64))
    add("sort_keys_f64", "torch.sort", torch_sort(torch.float64))
    if cupy is not None:
        def cupy_sort(dtype):
            def make(n):
                x = cupy.asarray(keys(n, dtype))
                return lambda: cupy.sort(x)  # a copy, then CUB onesweep SortKeys
            return make

        def cupy_sort_in_place(dtype):
            def make(n):
                src = cupy.asarray(keys(n, dtype))
                x = src.copy()
                return Fresh(lambda: cupy.copyto(x, src), lambda: x.sort())
            return make

        def cupy_argsort(dtype):
            def make(n):
                x = cupy.asarray(keys(n, dtype))
                return lambda: cupy.argsort(x)  # int64 indices (CUB SortPairs of keys, iota)
            return make

        add("sort_pairs_u32_u64", "cupy.argsort", cupy_argsort(torch.int32))
        add("sort_keys_u32", "cupy.sort", cupy_sort(torch.int32))
        add("sort_keys_u32", "cupy.ndarray.sort", cupy_sort_in_place(torch.int32))
        add("sort_keys_f32", "cupy.sort", cupy_sort(torch.float32))
        add("sort_keys_f32", "cupy.ndarray.sort", cupy_sort_in_place(torch.float32))
        add("sort_pairs_i64_u64", "cupy.argsort", cupy_argsort(torch.int64))
        for case, dtype in (("sort_keys_i64", torch.int64), ("sort_keys_f64", torch.float64)):
            add(case, "cupy.sort", cupy_sort(dtype))
            add(case, "cupy.ndarray.sort", cupy_sort_in_place(dtype))
    info = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cupy": getattr(cupy, "__version__", None)}
    print(json.dumps({"_info": info, **out}, indent=1))


if __name__ == "__main__":
    main()
