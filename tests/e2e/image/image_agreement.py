"""spec.json, the Dockerfile and tools/install-deps.sh describe one image.

Fails when they disagree on the base image, the apt packages or the job's
environment, when spec.json leaves the reference's schema or the job the
issue asks for, or when the Dockerfile loses a step docs/developing.md promises
(Release for sm_89 and sm_90, the CPU test suite, cmake --install, a CMD),
in its RUN lines or in tools/image-build.sh, which they call.
The Mutations cases feed damaged copies to the same checks, so a checker
that stopped looking would fail here too.

Usage: python3 image_agreement.py [-v]   (ctest: image.agreement)
Environment: DMLP_SOURCE_DIR, the repository (default: two levels up).
"""

import json
import os
import re
import shlex
import subprocess
import unittest
from pathlib import Path

SOURCE = Path(os.environ.get("DMLP_SOURCE_DIR", Path(__file__).resolve().parents[3]))

# The reference job's settings (shared/reference/spec.json) that the C++ image
# keeps, plus what replaces JAX_PLATFORMS / XLA_FLAGS.
REQUIRED_ENV = {
    "PLATFORM": "cuda", "STEPS": "1200", "SEED": "42", "LEARNING_RATE": "0.001",
    "BATCH": "4096", "MICROBATCHES": "8", "NUM_PROCESSES": "8", "DATA_SHARDS": "8",
    "FEATURES": "512", "WIDTH": "2048", "LAYERS": "3", "CLASSES": "10",
    "NCCL_SHM_DISABLE": "1", "NCCL_SOCKET_IFNAME": "lo",
}
REQUIRED_ENV_NAMES = {"COORDINATOR_PORT", "HEARTBEAT_TIMEOUT_SECONDS", "OUT_DIR"}
JAX_ONLY_ENV = {"JAX_PLATFORMS", "XLA_FLAGS", "PYTHONUNBUFFERED", "PYTHONHASHSEED"}
BASE = "nvidia/cuda:12.8.1-devel-ubuntu24.04"
IMAGE_BUILD = "tools/image-build.sh"
# The build stage's steps when its RUN lines call tools/image-build.sh.
IMAGE_BUILD_STEPS = (("build", "the configure and build step"), ("test", "the CPU test suite"),
                     ("install", "the programs installed"))
# The build context has no .git: the build stage takes the commit as build
# arguments and tools/image-build.sh hands them to CMake (docs/developing.md "Docker").
BUILD_ARGS = ("DMLP_GIT_COMMIT", "DMLP_GIT_DIRTY")


def plan_names(plan_cc_text):
    """The variable names dmlp-train reads (trainer/plan.cc's kPlanNames)."""
    match = re.search(r"kPlanNames\[\]\s*=\s*\{(.*?)\};", plan_cc_text, re.S)
    if not match:
        raise ValueError("kPlanNames not found in trainer/plan.cc")
    return set(re.findall(r'"([A-Z_]+)"', match.group(1)))


def instructions(dockerfile_text):
    """[(KEYWORD, arguments)] with continuation lines joined and comments dropped."""
    result, pending = [], ""
    for line in dockerfile_text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        text = pending + stripped
        pending = ""
        keyword, _, arguments = text.partition(" ")
        result.append((keyword.upper(), arguments.strip()))
    if pending:
        raise ValueError("the Dockerfile ends inside a continued instruction")
    return result


def stage_runs(dockerfile_text, stage):
    """The RUN arguments of the stage named `stage` (FROM ... AS stage), in order.
    tools/rehearse.sh runs the build stage's with this."""
    runs, current = [], None
    for keyword, arguments in instructions(dockerfile_text):
        if keyword == "FROM":
            words = [w for w in arguments.split() if not w.startswith("--platform")]
            current = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
        elif keyword == "RUN" and current == stage:
            runs.append(arguments)
    return runs


def stage_args(dockerfile_text, stage):
    """The names of the ARGs the stage named `stage` declares."""
    names, current = [], None
    for keyword, arguments in instructions(dockerfile_text):
        if keyword == "FROM":
            words = [w for w in arguments.split() if not w.startswith("--platform")]
            current = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
        elif keyword == "ARG" and current == stage:
            names.append(arguments.split("=", 1)[0].strip())
    return names


def global_args(dockerfile_text):
    """{name: default} of the ARGs before the first FROM: the only ones a FROM
    line can use (the base is one: `tools/rehearse.sh image` passes a stand-in)."""
    defaults = {}
    for keyword, arguments in instructions(dockerfile_text):
        if keyword == "FROM":
            break
        if keyword == "ARG":
            name, _, default = arguments.partition("=")
            defaults[name.strip()] = shlex.split(default)[0] if default.strip() else None
    return defaults


def resolve_image(image, defaults):
    """`image` with $NAME and ${NAME} replaced by the global ARG defaults, as a
    build without --build-arg resolves it; (image, [names without a default])."""
    unresolved = []

    def value(match):
        name = match.group(1) or match.group(2)
        if defaults.get(name) is None:
            unresolved.append(name)
            return match.group(0)
        return defaults[name]

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", value, image), unresolved


def parse_dockerfile(text):
    """{base, stages, apt, apt_runs, env, env_outside_final, runs, cmd}; FROM
    images resolved with the global ARGs' defaults."""
    parsed = {"base": None, "stages": [], "apt": [], "apt_runs": [], "env": {},
              "env_outside_final": [], "runs": [], "cmd": None, "from_errors": [],
              "unresolved_args": []}
    stage_names, stage_index = set(), -1
    defaults = global_args(text)
    final_from = max(i for i, (k, _) in enumerate(instructions(text)) if k == "FROM")
    for index, (keyword, arguments) in enumerate(instructions(text)):
        if keyword == "FROM":
            stage_index += 1
            words = arguments.split()
            words = [w for w in words if not w.startswith("--platform")]
            image, unresolved = resolve_image(words[0], defaults)
            parsed["unresolved_args"] += unresolved
            if parsed["base"] is None:
                parsed["base"] = image
            elif image not in stage_names and image != parsed["base"]:
                parsed["from_errors"].append(image)
            if len(words) >= 3 and words[1].upper() == "AS":
                stage_names.add(words[2])
            parsed["stages"].append(image)
        elif keyword == "RUN":
            parsed["runs"].append(arguments)
            if "apt-get" not in arguments:
                continue
            for command in arguments.split("&&"):
                words = shlex.split(command)
                if "apt-get" in words and "install" in words:
                    after = words[words.index("install") + 1:]
                    parsed["apt"] += [w for w in after if not w.startswith("-")]
                    parsed["apt_runs"].append(arguments)
        elif keyword == "ENV":
            words = shlex.split(arguments)
            if words and "=" not in words[0]:  # legacy form: ENV NAME value
                pairs = [(words[0], " ".join(words[1:]))]
            else:
                pairs = [tuple(word.split("=", 1)) for word in words]
            for name, value in pairs:
                if index < final_from:
                    parsed["env_outside_final"].append(name)
                parsed["env"][name] = value
        elif keyword == "CMD":
            parsed["cmd"] = arguments
    return parsed


def disagreements(spec, dockerfile_text, install_deps_packages, known_names, image_build_text=""):
    """Every way the three files disagree, as sentences; [] when they agree."""
    problems = []
    if set(spec) != {"sku", "checkpoint", "min_disk_gb", "image"}:
        problems.append(f"spec.json keys {sorted(spec)} are not the reference's schema")
    image = spec.get("image", {})
    if set(image) != {"base", "apt", "pip", "env"}:
        problems.append(f"spec.json image keys {sorted(image)} are not the reference's schema")
    if spec.get("sku") != "gpu_8x_l4":
        problems.append(f"spec.json sku is {spec.get('sku')!r}, not 'gpu_8x_l4'")
    if spec.get("checkpoint") is not True:
        problems.append("spec.json checkpoint is not true")
    disk = spec.get("min_disk_gb")
    if not isinstance(disk, int) or isinstance(disk, bool) or disk <= 0:
        problems.append(f"spec.json min_disk_gb {disk!r} is not a positive integer")
    if image.get("base") != BASE:
        problems.append(f"spec.json base {image.get('base')!r} is not {BASE}")
    if image.get("pip"):
        problems.append(f"spec.json pip is not empty: {image.get('pip')}")
    apt, env = image.get("apt", []), image.get("env", {})
    if len(set(apt)) != len(apt):
        problems.append("spec.json apt names a package twice")
    if any(p.startswith(("libnccl", "libcublas", "cuda-")) for p in apt):
        problems.append("spec.json apt names a package the CUDA image holds (NCCL, cuBLAS, CUDA)")
    if any(not isinstance(v, str) for v in env.values()):
        problems.append("spec.json env values must all be strings")
    for name, value in REQUIRED_ENV.items():
        if env.get(name) != value:
            problems.append(f"spec.json env {name}={env.get(name)!r}, the job needs {value!r}")
    for name in sorted(REQUIRED_ENV_NAMES - set(env)):
        problems.append(f"spec.json env lacks {name}")
    for name in sorted(JAX_ONLY_ENV & set(env)):
        problems.append(f"spec.json env keeps the JAX-only {name}")
    for name in sorted(set(env) - known_names):
        if not name.startswith("NCCL_"):
            problems.append(f"spec.json env {name} is read by nothing in dmlp (trainer/plan.cc)")

    docker = parse_dockerfile(dockerfile_text)
    if docker["base"] != image.get("base"):
        problems.append(f"Dockerfile FROM {docker['base']} != spec.json base {image.get('base')}")
    for name in docker["unresolved_args"]:
        problems.append(f"Dockerfile FROM uses ${{{name}}}, which no ARG before the first FROM gives a default")
    for stray in docker["from_errors"]:
        problems.append(f"Dockerfile FROM {stray} is neither the base nor an earlier stage")
    if len(docker["apt_runs"]) != 1:
        problems.append(f"Dockerfile has {len(docker['apt_runs'])} apt-get install steps, not one")
    for run in docker["apt_runs"]:
        if "apt-get update" not in run or "rm -rf /var/lib/apt/lists/*" not in run:
            problems.append("Dockerfile apt step must update and remove /var/lib/apt/lists/* itself")
    missing, extra = set(apt) - set(docker["apt"]), set(docker["apt"]) - set(apt)
    if missing:
        problems.append(f"Dockerfile lacks spec.json apt packages {sorted(missing)}")
    if extra:
        problems.append(f"Dockerfile installs packages spec.json lacks {sorted(extra)}")
    if docker["env"] != env:
        for name in sorted(set(env) | set(docker["env"])):
            if env.get(name) != docker["env"].get(name):
                problems.append(f"ENV {name}: spec.json {env.get(name)!r}, "
                                f"Dockerfile {docker['env'].get(name)!r}")
    for name in docker["env_outside_final"]:
        problems.append(f"Dockerfile sets ENV {name} before the final stage (the tests would see it)")
    runs = " ".join(docker["runs"])
    if IMAGE_BUILD in runs:
        for step, why in IMAGE_BUILD_STEPS:
            if not any(run.split()[:2] == [IMAGE_BUILD, step] for run in docker["runs"]):
                problems.append(f"Dockerfile RUN steps lack {IMAGE_BUILD} {step} ({why})")
        runs += " " + image_build_text  # the promised commands are in the script
    for needle, why in (('-DCMAKE_BUILD_TYPE=Release', "a Release build"),
                        ('-DCMAKE_CUDA_ARCHITECTURES="89;90"', "sm_89 and sm_90"),
                        ("-DDMLP_CUDA=ON", "the CUDA platform, required"),
                        ("ctest --test-dir build", "the CPU test suite"),
                        ("cmake --install build", "the programs installed")):
        if needle not in runs:
            problems.append(f"Dockerfile RUN steps (and {IMAGE_BUILD}) lack {needle} ({why})")
    declared = stage_args(dockerfile_text, "build")
    for name in BUILD_ARGS:
        if name not in declared:
            problems.append(f"Dockerfile build stage lacks ARG {name} (the build's commit, docs/developing.md, Docker)")
        if f"-D{name}=" not in runs:
            problems.append(f"Dockerfile RUN steps (and {IMAGE_BUILD}) do not pass -D{name} to CMake")
    if " -E " in runs or "--exclude-regex" in runs or " -LE " in runs:
        problems.append("Dockerfile's ctest excludes tests")
    if not docker["cmd"]:
        problems.append("Dockerfile has no CMD")

    if sorted(install_deps_packages) != sorted(apt):
        problems.append(f"tools/install-deps.sh --build installs {sorted(install_deps_packages)}, "
                        f"spec.json apt is {sorted(apt)} (CI must build with the image's packages)")
    return problems


def repository_inputs():
    spec = json.loads((SOURCE / "spec.json").read_text())
    dockerfile = (SOURCE / "Dockerfile").read_text()
    listed = subprocess.run(["bash", str(SOURCE / "tools/install-deps.sh"), "--list", "--build"],
                            capture_output=True, text=True, check=True).stdout.split()
    names = plan_names((SOURCE / "trainer/plan.cc").read_text())
    return spec, dockerfile, listed, names, (SOURCE / IMAGE_BUILD).read_text()


class Repository(unittest.TestCase):
    def test_spec_dockerfile_and_install_deps_agree(self):
        problems = disagreements(*repository_inputs())
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_parser_reads_what_the_dockerfile_says(self):
        spec, dockerfile, _, _, _ = repository_inputs()
        parsed = parse_dockerfile(dockerfile)
        self.assertEqual(parsed["base"], BASE)
        self.assertEqual(parsed["apt"], spec["image"]["apt"])  # same order, too
        self.assertEqual(parsed["env"], spec["image"]["env"])


class Mutations(unittest.TestCase):
    """Each damaged copy must be reported, with the right sentence."""

    def setUp(self):
        (self.spec, self.dockerfile, self.listed, self.names,
         self.image_build) = repository_inputs()

    def problems(self, spec=None, dockerfile=None, listed=None, image_build=None):
        return "\n".join(disagreements(spec or self.spec, dockerfile or self.dockerfile,
                                       listed if listed is not None else self.listed, self.names,
                                       image_build if image_build is not None else self.image_build))

    def edited_spec(self, edit):
        spec = json.loads(json.dumps(self.spec))
        edit(spec)
        return spec

    def test_other_base(self):
        text = self.dockerfile.replace(BASE, "nvidia/cuda:12.6.0-devel-ubuntu24.04", 1)
        self.assertIn("Dockerfile FROM nvidia/cuda:12.6.0", self.problems(dockerfile=text))

    def test_base_argument_default_is_the_base(self):
        """The base is ARG BASE_IMAGE's default: a build without --build-arg gets it."""
        self.assertEqual(global_args(self.dockerfile).get("BASE_IMAGE"), BASE)
        self.assertIn("FROM ${BASE_IMAGE} AS base", self.dockerfile)

    def test_other_base_argument_default(self):
        text = self.dockerfile.replace(f"ARG BASE_IMAGE={BASE}", "ARG BASE_IMAGE=debian:13")
        self.assertIn(f"Dockerfile FROM debian:13 != spec.json base {BASE}", self.problems(dockerfile=text))

    def test_base_argument_without_default(self):
        for declaration in (f"ARG BASE_IMAGE={BASE}", f"ARG OTHER={BASE}"):
            text = self.dockerfile.replace(f"ARG BASE_IMAGE={BASE}", declaration.replace(f"={BASE}", ""))
            self.assertIn("Dockerfile FROM uses ${BASE_IMAGE}, which no ARG before the first FROM gives a default",
                          self.problems(dockerfile=text))

    def test_argument_forms_resolved(self):
        defaults = {"BASE_IMAGE": BASE, "TAG": "24.04"}
        self.assertEqual(resolve_image("${BASE_IMAGE}", defaults), (BASE, []))
        self.assertEqual(resolve_image("ubuntu:$TAG", defaults), ("ubuntu:24.04", []))
        self.assertEqual(resolve_image("${NONE}", defaults), ("${NONE}", ["NONE"]))

    def test_package_missing_from_dockerfile(self):
        text = self.dockerfile.replace("      libgloo-dev \\\n", "")
        self.assertIn("Dockerfile lacks spec.json apt packages ['libgloo-dev']",
                      self.problems(dockerfile=text))

    def test_package_only_in_dockerfile(self):
        text = self.dockerfile.replace("      procps \\\n", "      procps \\\n      vim \\\n")
        self.assertIn("Dockerfile installs packages spec.json lacks ['vim']",
                      self.problems(dockerfile=text))

    def test_package_only_in_spec(self):
        spec = self.edited_spec(lambda s: s["image"]["apt"].append("curl"))
        self.assertIn("Dockerfile lacks spec.json apt packages ['curl']", self.problems(spec=spec))

    def test_env_value_differs(self):
        text = self.dockerfile.replace("STEPS=1200", "STEPS=1000")
        self.assertIn("ENV STEPS: spec.json '1200', Dockerfile '1000'", self.problems(dockerfile=text))

    def test_env_missing_from_dockerfile(self):
        text = self.dockerfile.replace("    DATA_SHARDS=8 \\\n", "")
        self.assertIn("ENV DATA_SHARDS: spec.json '8', Dockerfile None", self.problems(dockerfile=text))

    def test_env_in_build_stage(self):
        text = self.dockerfile.replace("WORKDIR /src/dmlp", "WORKDIR /src/dmlp\nENV PLATFORM=cuda")
        self.assertIn("sets ENV PLATFORM before the final stage", self.problems(dockerfile=text))

    def test_legacy_env_form_is_read(self):
        text = self.dockerfile.replace("    NCCL_SOCKET_IFNAME=lo \\\n", "") + "ENV NCCL_SOCKET_IFNAME eth0\n"
        self.assertIn("ENV NCCL_SOCKET_IFNAME: spec.json 'lo', Dockerfile 'eth0'",
                      self.problems(dockerfile=text))

    def test_jax_variables_rejected(self):
        spec = self.edited_spec(lambda s: s["image"]["env"].update(XLA_FLAGS="--x"))
        self.assertIn("keeps the JAX-only XLA_FLAGS", self.problems(spec=spec))

    def test_job_settings_enforced(self):
        spec = self.edited_spec(lambda s: s["image"]["env"].update(DATA_SHARDS="4"))
        self.assertIn("spec.json env DATA_SHARDS='4', the job needs '8'", self.problems(spec=spec))

    def test_unknown_variable_rejected(self):
        spec = self.edited_spec(lambda s: s["image"]["env"].update(MICRO_BATCHES="8"))
        self.assertIn("MICRO_BATCHES is read by nothing", self.problems(spec=spec))

    def test_pip_must_be_empty(self):
        spec = self.edited_spec(lambda s: s["image"].update(pip=["jax"]))
        self.assertIn("spec.json pip is not empty", self.problems(spec=spec))

    def test_held_cuda_packages_rejected(self):
        spec = self.edited_spec(lambda s: s["image"]["apt"].append("libnccl-dev"))
        self.assertIn("a package the CUDA image holds", self.problems(spec=spec))

    def test_apt_lists_must_go(self):
        text = self.dockerfile.replace(" \\\n && rm -rf /var/lib/apt/lists/*", "")
        self.assertIn("remove /var/lib/apt/lists/*", self.problems(dockerfile=text))

    def test_gpu_targets_and_tests_required(self):
        script = self.image_build.replace('"89;90"', '"90"').replace("ctest --test-dir build", "true")
        found = self.problems(image_build=script)
        self.assertIn("sm_89 and sm_90", found)
        self.assertIn("the CPU test suite", found)

    def test_excluded_tests_rejected(self):
        script = self.image_build.replace("ctest --test-dir build", "ctest --test-dir build -E e2e")
        self.assertIn("ctest excludes tests", self.problems(image_build=script))

    def test_image_build_steps_required(self):
        text = self.dockerfile.replace("RUN tools/image-build.sh test\n", "")
        self.assertIn("lack tools/image-build.sh test (the CPU test suite)",
                      self.problems(dockerfile=text))

    def test_commands_written_in_the_dockerfile_count(self):
        """A Dockerfile without the script must hold the commands itself."""
        text = self.dockerfile.replace("RUN tools/image-build.sh build\n",
                                       "RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release\n")
        text = text.replace(IMAGE_BUILD, "true")
        found = self.problems(dockerfile=text)
        self.assertIn("lack -DDMLP_CUDA=ON", found)
        self.assertNotIn("lack -DCMAKE_BUILD_TYPE=Release", found)

    def test_build_identity_arguments_required(self):
        text = self.dockerfile.replace("ARG DMLP_GIT_COMMIT", "ARG OTHER")
        self.assertIn("lacks ARG DMLP_GIT_COMMIT", self.problems(dockerfile=text))
        script = self.image_build.replace("-DDMLP_GIT_DIRTY=", "-DOTHER=")
        self.assertIn("do not pass -DDMLP_GIT_DIRTY to CMake", self.problems(image_build=script))

    def test_build_stage_runs(self):
        self.assertEqual(stage_runs(self.dockerfile, "build"),
                         [f"{IMAGE_BUILD} build", f"{IMAGE_BUILD} test",
                          f"{IMAGE_BUILD} install /opt/dmlp"])

    def test_stray_stage_base(self):
        text = self.dockerfile.replace("FROM base AS build", "FROM ubuntu:24.04 AS build")
        self.assertIn("FROM ubuntu:24.04 is neither the base nor an earlier stage",
                      self.problems(dockerfile=text))

    def test_install_deps_must_match(self):
        found = self.problems(listed=[p for p in self.listed if p != "python3"])
        self.assertIn("tools/install-deps.sh --build installs", found)


if __name__ == "__main__":
    unittest.main()
