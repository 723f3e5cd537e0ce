"""Keeps README.md's commands and tables from rotting.

Every ```sh block of the README starts with `# run-by: KIND`:
  readme-test        this test runs it (in order, each block in a fresh bash
                     with `set -euo pipefail`, in a scratch directory holding
                     `run.sh` and `build/bin`, with no job variable inherited)
  ci (...)           the set-up commands: .ci/run runs tools/test-all.sh, and
                     image.main_job runs tools/main-job.sh
  manual (reason)    needs what tests do not have (a super session, Docker, a
                     GPU); the repository paths it names must exist
  test NAME (...)    the ctest case NAME runs it (as the reason says: on the
                     three-host cluster of tests/e2e/cluster); NAME must be a
                     registered case, and the block names no missing path
Blocks that show a state file check must print digests that equal the run's.
The configuration table must name every variable dmlp-train reads
(trainer/plan.cc) and every variable of spec.json, with spec.json's values.
The layout table must name every top-level folder of the repository.

Environment: DMLP_BIN_DIR (the programs), DMLP_SOURCE_DIR (the repository).
"""

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import unittest
from pathlib import Path

SOURCE = Path(os.environ.get("DMLP_SOURCE_DIR", Path(__file__).resolve().parents[3]))
BIN = Path(os.environ.get("DMLP_BIN_DIR", SOURCE / "build" / "bin")).resolve()
README = SOURCE / "README.md"
KINDS = ("readme-test", "ci", "manual", "test")
HEX64 = re.compile(r"\b([0-9a-f]{64})\b")
# Variables documented beyond plan.cc's list: read elsewhere in dmlp or by run.sh.
EXTRA_DOCUMENTED = {"LOCAL_RANK", "DMLP_CPU_THREADS", "DMLP_PROFILE", "CUDA_VISIBLE_DEVICES"}


def fenced_blocks(text):
    """[(info string, body, line number)] of every fenced block."""
    blocks, lines, index = [], text.splitlines(), 0
    while index < len(lines):
        match = re.match(r"^```(\S*)\s*$", lines[index])
        if match:
            start, body = index + 1, []
            index += 1
            while index < len(lines) and lines[index].strip() != "```":
                body.append(lines[index])
                index += 1
            if index == len(lines):
                raise ValueError(f"README.md:{start}: unclosed code block")
            blocks.append((match.group(1), "\n".join(body) + "\n", start))
        index += 1
    return blocks


def run_by(body):
    first = body.splitlines()[0] if body.strip() else ""
    match = re.match(r"^# run-by: ([a-z-]+)(.*)$", first)
    return (match.group(1), match.group(2).strip()) if match else (None, "")


def registered_tests():
    """e2e.<component>.<case> of every foreach(case ...) in tests/e2e/<component>.cmake."""
    names = set()
    for cmake in (SOURCE / "tests/e2e").glob("*.cmake"):
        for cases in re.findall(r"foreach\((?:case|engine) ([^)]*)\)", cmake.read_text()):
            names |= {f"e2e.{cmake.stem}.{case}" for case in cases.split()}
    return names


def plan_names():
    text = (SOURCE / "trainer/plan.cc").read_text()
    body = re.search(r"kPlanNames\[\]\s*=\s*\{(.*?)\};", text, re.S).group(1)
    return set(re.findall(r'"([A-Z_]+)"', body))


def table_rows(text, heading):
    """Rows (lists of cells) of the first table after `## heading`."""
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def top_level_folders():
    """The repository's top-level folders: git's tracked ones where there is a
    checkout (not what builds and test runs leave), else the directory's own
    less build and run outputs (a Docker build context has no .git)."""
    # Only a checkout with git installed: the image's build stage has neither
    # (tools/install-deps.sh --build installs no git), and tools/rehearse.sh
    # runs the suite there.
    if (SOURCE / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(["git", "-C", str(SOURCE), "ls-files"], capture_output=True, text=True)
        if listed.returncode == 0:
            return sorted({path.split("/", 1)[0] for path in listed.stdout.splitlines() if "/" in path})
    skip = re.compile(r"^(\.git|build.*|out.*|\.venv.*|__pycache__|Testing)$")
    return sorted(e.name for e in SOURCE.iterdir() if e.is_dir() and not skip.match(e.name))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


class Structure(unittest.TestCase):
    def setUp(self):
        self.text = README.read_text()
        self.blocks = [b for b in fenced_blocks(self.text) if b[0] in ("sh", "bash", "shell")]

    def test_every_shell_block_says_what_runs_it(self):
        self.assertGreater(len(self.blocks), 3)
        for _, body, line in self.blocks:
            kind, reason = run_by(body)
            self.assertIn(kind, KINDS, f"README.md:{line}: first line must be '# run-by: <{'|'.join(KINDS)}>'")
            if kind in ("manual", "ci"):
                self.assertRegex(reason, r"^\(.+\)$", f"README.md:{line}: {kind} needs a (reason)")
            if kind == "test":
                self.assertRegex(reason, r"^e2e\.[\w.]+ \(.+\)$", f"README.md:{line}: test NAME (reason)")
                self.assertIn(reason.split()[0], registered_tests(), f"README.md:{line}: no such ctest case")
        for info, _, line in fenced_blocks(self.text):
            self.assertIn(info, ("sh", "text", "json"), f"README.md:{line}: use ```sh for commands")

    def test_set_up_is_exactly_the_two_commands_and_ci_runs_them(self):
        setup = [b for b in self.blocks if run_by(b[1])[0] == "ci"]
        self.assertEqual(len(setup), 1)
        commands = [line for line in setup[0][1].splitlines() if line and not line.startswith("#")]
        self.assertEqual(commands, ["tools/main-job.sh", "tools/test-all.sh"])
        for script in commands:
            self.assertTrue(os.access(SOURCE / script, os.X_OK), script)
        ci = (SOURCE / ".ci/run").read_text()
        self.assertRegex(ci, r"(?m)^exec tools/test-all\.sh\s*$")
        self.assertIn("tools/main-job.sh", (SOURCE / "tests/e2e/image.cmake").read_text())
        self.assertIn("ctest --test-dir build", (SOURCE / "tools/test-all.sh").read_text())

    def test_manual_blocks_name_existing_files(self):
        for _, body, line in self.blocks:
            if run_by(body)[0] not in ("manual", "test"):
                continue
            for token in re.findall(r"(?<![\w/$:.-])((?:[\w.-]+/)*[\w.-]+\.(?:sh|json|py))\b", body):
                if token.startswith(("out/", "/")):
                    continue
                self.assertTrue((SOURCE / token).exists(), f"README.md:{line}: {token} does not exist")

    def test_configuration_table_covers_every_variable_with_the_image_values(self):
        rows = table_rows(self.text, "Configuration")
        documented = {}
        for cells in rows:
            name = cells[0].strip("`")
            self.assertNotIn(name, documented, f"{name} is listed twice")
            documented[name] = cells
        spec_env = json.loads((SOURCE / "spec.json").read_text())["image"]["env"]
        for name in sorted(plan_names() | set(spec_env) | EXTRA_DOCUMENTED):
            self.assertIn(name, documented, f"README's configuration table lacks {name}")
        for name, cells in documented.items():
            self.assertEqual(len(cells), 4, name)
            expected = f"`{spec_env[name]}`" if name in spec_env else "—"
            self.assertEqual(cells[3], expected, f"{name}: README image column vs spec.json")

    def test_layout_table_names_every_top_level_folder(self):
        listed = " ".join(cells[0] for cells in table_rows(self.text, "Repository layout"))
        for folder in top_level_folders():
            self.assertIn(f"`{folder}/`", listed, f"README's layout lacks {folder}/")
        for path in re.findall(r"`([\w.]+/?)`", listed):
            self.assertTrue((SOURCE / path).exists(), f"README's layout names missing {path}")

    def test_placeholders_for_the_lead(self):
        for heading in ("Performance", "CPU GEMM"):
            self.assertIn(f"\n## {heading}\n", self.text)


class Commands(unittest.TestCase):
    """Runs the readme-test blocks, in README order, as a reader would."""

    @classmethod
    def setUpClass(cls):
        cls.scratch = Path(tempfile.mkdtemp(prefix="dmlp-readme-"))
        (cls.scratch / "run.sh").symlink_to(SOURCE / "run.sh")
        (cls.scratch / "build").mkdir()
        (cls.scratch / "build" / "bin").symlink_to(BIN)
        cls.port = free_port()
        cls.env = {k: v for k, v in os.environ.items()
                   if k not in plan_names() | EXTRA_DOCUMENTED and not k.startswith(("NCCL_", "DMLP_"))}
        text = README.read_text()
        cls.blocks = [(body, line) for info, body, line in fenced_blocks(text)
                      if info == "sh" and run_by(body)[0] == "readme-test"]
        cls.results = []
        for body, line in cls.blocks:
            # Parallel ctest runs must not share a port: the README's 12355 becomes a free one.
            script = body.replace("COORDINATOR_PORT=12355", f"COORDINATOR_PORT={cls.port}")
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cls.scratch,
                                  env=cls.env, capture_output=True, text=True, timeout=300,
                                  stdin=subprocess.DEVNULL)
            cls.results.append((body, line, done))

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["rm", "-rf", str(cls.scratch)], check=False)

    def test_every_block_succeeds(self):
        self.assertGreaterEqual(len(self.results), 3)
        for body, line, done in self.results:
            self.assertEqual(done.returncode, 0,
                             f"README.md:{line} exited {done.returncode}\n{body}\n"
                             f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}")

    def test_demo_runs_are_verified_and_equal(self):
        for name in ("demo-1", "demo-2"):
            result = json.loads((self.scratch / "out" / name / "result.json").read_text())
            self.assertTrue(result["complete"])
        one = (self.scratch / "out/demo-1/metrics.jsonl").read_bytes()
        two = (self.scratch / "out/demo-2/metrics.jsonl").read_bytes()
        self.assertEqual(one, two)  # the promise the README shows: 1 and 2 ranks, same bits
        self.assertTrue(json.loads((self.scratch / "report.json").read_text())["verdict"] == "PASS")

    def test_state_file_commands_print_the_run_digests(self):
        checked = 0
        for body, line, done in self.results:
            if "state.safetensors | sha256sum" not in body and "| sha256sum" not in body:
                continue
            run_dir = self.scratch / "out" / "demo-2"
            last = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
            result = json.loads((run_dir / "result.json").read_text())
            printed = re.findall(r"^([0-9a-f]{64})  -$", done.stdout, re.M)
            self.assertEqual(printed, [last["params_sha256"], result["final_params_sha256"]],
                             f"README.md:{line}: the digests of the state file\n{done.stdout}")
            header = json.loads(done.stdout.splitlines()[0])
            self.assertEqual(header["__metadata__"]["params_sha256"], last["params_sha256"])
            checked += 1
        self.assertEqual(checked, 1)


if __name__ == "__main__":
    unittest.main()
