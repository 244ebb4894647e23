"""The kernel microbenchmark JSON names, inside the file, the GPU, driver, CUDA and NCCL,
the library versions, the git commit and the command (pytest-benchmark's machine_info)."""

import sys


def pytest_benchmark_update_machine_info(config, machine_info):
    from harness import meta
    machine_info.update(meta.gpu())
    machine_info.update(meta.cuda_versions())
    machine_info["versions"] = meta.versions()
    machine_info["git_commit"] = meta.git_commit()
    machine_info["command"] = " ".join(sys.argv)
