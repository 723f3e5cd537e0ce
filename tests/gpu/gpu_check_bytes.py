"""The rows that hold the CUDA platform to the CPU platform's bytes: dmlp's
draws (samples, labels, initial parameters) and whole jobs with dmlp's ordered
SGEMM (GEMM=ordered), file for file. Any difference is a FAIL: these need no
tolerance and no jax, so nothing about the device's software can excuse one.

Standard library only, Python 3.8 or newer, as all of the runner.
"""

import json
import os

from gpu_check_run import last_error, read_text, run_logged

# What dmlp_draws writes (tests/gpu/dmlp_draws/main.cc); definition.txt is text
# naming the data definition, equal by construction and compared all the same.
DRAWS_FILES = ("samples.f32", "labels.i32", "init.f32", "definition.txt")
# A plan small enough for the CPU platform to run in seconds, large enough
# that every kernel (several layers, microbatches, shards, classes) takes part.
SMALL_PLAN = ("SEED=42", "BATCH=256", "MICROBATCHES=2", "DATA_SHARDS=2", "LEARNING_RATE=0.001",
              "FEATURES=64", "WIDTH=256", "LAYERS=2", "CLASSES=10")
SMALL_PLAN_STEPS = "6"
# The summary's digests (result.json): the rest of it names the platform and differs by design.
SUMMARY_DIGESTS = ("final_loss", "final_params_sha256", "final_opt_state_sha256", "params_sha256")


def row_draws_bytes(checks):
    """dmlp_draws --platform cuda against --platform cpu at the spec's sizes, byte for byte."""
    check = "draws cuda = cpu"
    draws = os.path.join(checks.bin, "dmlp_draws")
    if not os.access(draws, os.X_OK):
        checks.record(check, "FAIL", "no dmlp_draws in %s" % checks.bin)
        return
    for platform in ("cpu", "cuda"):
        log = checks.path("draws-%s.out" % platform)
        status = run_logged(["timeout", "-k", "5", checks.job_timeout, draws, "--platform", platform,
                             checks.path("draws-" + platform)], log, status=True)
        if status != 0:
            checks.record(check, "FAIL", "dmlp_draws --platform %s rc=%d: %s" % (platform, status, last_error(log)))
            return
    differences = []
    for name in DRAWS_FILES:
        difference = checks.first_difference(checks.path("draws-cpu/" + name), checks.path("draws-cuda/" + name),
                                             with_errors=True)
        if difference is not None:
            differences.append("%s: %s" % (name, difference))
    sizes = sum(os.path.getsize(checks.path("draws-cpu/" + name)) for name in DRAWS_FILES)
    for platform in ("cpu", "cuda"):  # 46 MB each at the spec's sizes: not for the logs tarball
        for name in DRAWS_FILES:
            try:
                os.remove(checks.path("draws-%s/%s" % (platform, name)))
            except OSError:
                pass
    if differences:
        checks.record(check, "FAIL", "; ".join(differences))
    else:
        checks.record(check, "PASS", "%s: byte-identical (%.1f MB)" % (" ".join(DRAWS_FILES), sizes / 1e6))


def run_difference(checks, left, right, ranks):
    """None when two run folders hold the same receipts, metrics, state file and
    summary digests; else the first difference, in words."""
    compared = ["metrics.jsonl", "state.safetensors"] + ["rank-%d.jsonl" % rank for rank in range(int(ranks))]
    for name in compared:
        difference = checks.first_difference(os.path.join(left, name), os.path.join(right, name),
                                             with_errors=True)
        if difference is not None:
            return "%s: %s" % (name, difference)
    summaries = []
    for folder in (left, right):
        try:
            summary = json.loads(read_text(os.path.join(folder, "result.json")))
        except ValueError:
            return "%s/result.json is not JSON" % folder
        summaries.append({key: summary.get(key) for key in SUMMARY_DIGESTS})
    if summaries[0] != summaries[1]:
        differing = [key for key in SUMMARY_DIGESTS if summaries[0][key] != summaries[1][key]]
        return "result.json %s differ" % " ".join(differing)
    return None


def rows_cuda_equals_cpu(checks):
    """The same small plan on PLATFORM=cpu and PLATFORM=cuda GEMM=ordered
    (COLLECTIVES=gloo), 1 and 2 ranks: receipts, metrics, state file and
    summary digests byte-identical, and dmlp-verify --against PASS."""
    for ranks in ("1", "2"):
        check = "cuda = cpu, %s rank%s" % (ranks, "s" if ranks != "1" else "")
        names = {"cpu": "bytes-cpu-" + ranks, "cuda": "bytes-cuda-" + ranks}
        failure = None
        for platform, extra in (("cpu", SMALL_PLAN),
                                ("cuda", SMALL_PLAN + ("GEMM=ordered", "COLLECTIVES=gloo"))):
            name = names[platform]
            if checks.run_job(name, platform, "fp32", SMALL_PLAN_STEPS, ranks, extra, base={}) != 0:
                failure = "job %s failed: %s" % (name, last_error(checks.path(name + ".stderr")))
                break
            if not checks.verify(checks.path(name)):
                failure = "dmlp-verify %s not PASS" % name
                break
        if failure is None:
            difference = run_difference(checks, checks.path(names["cpu"]), checks.path(names["cuda"]), ranks)
            if difference is not None:
                failure = "GEMM=ordered differs from the CPU: " + difference
            elif not checks.verify(checks.path(names["cuda"]), "--against", checks.path(names["cpu"])):
                failure = "dmlp-verify cuda --against cpu not PASS"
        if failure is None:
            checks.record(check, "PASS", "%s steps, GEMM=ordered: receipts, metrics.jsonl, state.safetensors and "
                          "summary digests byte-identical to PLATFORM=cpu; dmlp-verify --against PASS"
                          % SMALL_PLAN_STEPS)
        else:
            checks.record(check, "FAIL", failure)
