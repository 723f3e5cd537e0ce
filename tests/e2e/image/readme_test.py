"""Keeps README.md's and docs/*.md's commands, tables and links from rotting.

Every ```sh block of the README and of every docs/ page starts with
`# run-by: KIND`:
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
The readme-test blocks run in reading order: the README's, then each docs/
page's in name order (they use the README's demo runs).
Blocks that show a state file check must print digests that equal the run's.
The configuration table (docs/configuration.md) must name every variable
dmlp-train reads (trainer/plan.cc) and every variable of spec.json, with
spec.json's values. The layout table (docs/developing.md) must name every
top-level folder of the repository.
Every link of these pages to a file or a heading (relative paths, #anchors, as
GitHub renders them) must lead somewhere, every docs/ page must be linked from
the README, and every docs/ page starts with its answer (a bold sentence).

Environment: DMLP_BIN_DIR (the programs), DMLP_SOURCE_DIR (the repository).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from e2e_support import free_port, job_env  # noqa: E402

SOURCE = Path(os.environ.get("DMLP_SOURCE_DIR", Path(__file__).resolve().parents[3]))
BIN = Path(os.environ.get("DMLP_BIN_DIR", SOURCE / "build" / "bin")).resolve()
README = SOURCE / "README.md"
DOCS = SOURCE / "docs"
KINDS = ("readme-test", "ci", "manual", "test")
HEX64 = re.compile(r"\b([0-9a-f]{64})\b")
# Variables documented beyond plan.cc's list: read elsewhere in dmlp or by run.sh.
EXTRA_DOCUMENTED = {"LOCAL_RANK", "DMLP_CPU_THREADS", "DMLP_PROFILE", "CUDA_VISIBLE_DEVICES"}


def documents():
    """The README, then the docs/ pages in name order: the order they are read and run."""
    return [README] + sorted(DOCS.glob("*.md"))


def shown(path):
    """A document's name as messages give it: README.md, docs/verifier.md."""
    return str(path.relative_to(SOURCE))


def fenced_blocks(text, name="README.md"):
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
                raise ValueError(f"{name}:{start}: unclosed code block")
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
    """Rows (lists of cells) of the first table after the heading `# heading`
    (of any level) and before the next heading of a level as high or higher."""
    match = re.search(rf"(?m)^(#+) {re.escape(heading)}\n", text)
    if not match:
        raise AssertionError(f"no heading {heading!r}")
    section = text[match.end():]
    end = re.search(rf"(?m)^#{{1,{len(match.group(1))}}} ", section)
    section = section[:end.start()] if end else section
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


def slug(heading):
    """The anchor GitHub gives a heading: lower case, no punctuation but - and _,
    spaces as hyphens (`The report for people: `--html`` -> the-report-for-people---html)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def outside_code(text):
    """The text with fenced blocks blanked out (their lines kept, so line numbers hold)."""
    lines, inside = text.splitlines(), False
    for index, line in enumerate(lines):
        if re.match(r"^```", line):
            inside = not inside
            lines[index] = ""
        elif inside:
            lines[index] = ""
    return lines


def anchors(text):
    """Every anchor of a Markdown text's headings, with GitHub's -1, -2 for repeats."""
    found, seen = set(), {}
    for line in outside_code(text):
        match = re.match(r"^#{1,6} (.+?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def broken_links(path, root):
    """[(line, target, why)] for each link of the Markdown file at `path` to a
    file (relative to the file's folder) or heading that does not exist. Links
    with a scheme (https:, mailto:) are not followed; code spans and fenced
    blocks hold no links."""
    text, broken = path.read_text(), []
    for number, line in enumerate(outside_code(text), 1):
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            try:
                dest.relative_to(root.resolve())
            except ValueError:
                broken.append((number, target, "leaves the repository"))
                continue
            if not dest.exists():
                broken.append((number, target, "no such file"))
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
                broken.append((number, target, f"no heading #{anchor} in {dest.name}"))
    return broken


class Structure(unittest.TestCase):
    def setUp(self):
        self.text = README.read_text()
        # (document name, info, body, line) of every shell block of every document
        self.blocks = [(shown(doc), info, body, line) for doc in documents()
                       for info, body, line in fenced_blocks(doc.read_text(), shown(doc))
                       if info in ("sh", "bash", "shell")]

    def test_every_shell_block_says_what_runs_it(self):
        self.assertGreater(len(self.blocks), 3)
        for name, _, body, line in self.blocks:
            kind, reason = run_by(body)
            self.assertIn(kind, KINDS, f"{name}:{line}: first line must be '# run-by: <{'|'.join(KINDS)}>'")
            if kind in ("manual", "ci"):
                self.assertRegex(reason, r"^\(.+\)$", f"{name}:{line}: {kind} needs a (reason)")
            if kind == "test":
                self.assertRegex(reason, r"^e2e\.[\w.]+ \(.+\)$", f"{name}:{line}: test NAME (reason)")
                self.assertIn(reason.split()[0], registered_tests(), f"{name}:{line}: no such ctest case")
        for doc in documents():
            for info, _, line in fenced_blocks(doc.read_text(), shown(doc)):
                self.assertIn(info, ("sh", "text", "json"), f"{shown(doc)}:{line}: use ```sh for commands")

    def test_docs_pages_exist_and_the_readme_links_each(self):
        pages = sorted(DOCS.glob("*.md"))
        self.assertGreaterEqual(len(pages), 11)
        linked = {(README.parent / target.partition("#")[0]).resolve()
                  for line in outside_code(self.text) for target in LINK.findall(line)}
        for page in pages:
            self.assertIn(page.resolve(), linked, f"README.md has no link to {shown(page)}")
            body = [line for line in page.read_text().splitlines() if line.strip()]
            self.assertRegex(body[0], r"^# \S", f"{shown(page)}: starts with its title")
            self.assertTrue(body[1].startswith("**"), f"{shown(page)}: the answer (in bold) comes first")

    def test_every_link_leads_somewhere(self):
        broken = [f"{shown(doc)}:{line}: link ({target}) points nowhere: {why}"
                  for doc in documents() for line, target, why in broken_links(doc, SOURCE)]
        self.assertEqual(broken, [], "\n".join(broken))

    def test_a_broken_link_is_found(self):
        """The link check can fail: a page with a missing file, a missing heading
        and a link out of the tree, beside good links, as GitHub reads them."""
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            (root / "docs").mkdir()
            (root / "code.h").write_text("")
            (root / "docs" / "a.md").write_text(
                "# A\n\n## The report for people: `--html`\n\n## Twice\n\n## Twice\n")
            page = root / "docs" / "b.md"
            page.write_text(
                "# B\n\n[ok](a.md) [ok](a.md#the-report-for-people---html) [ok](a.md#twice-1)\n"
                "[ok](../code.h) [ok](#b) [ok](https://example.org/x.md) `[not a link](gone.md)`\n"
                "[gone](gone.md)\n"
                "[no such heading](a.md#nowhere)\n"
                "![picture](../doc/gone.png)\n"
                "[out of the tree](../../elsewhere.md)\n"
                "[here, no such heading](#nowhere)\n"
                "```sh\n[in a code block](gone.md)\n```\n")
            self.assertEqual(broken_links(page, root), [
                (5, "gone.md", "no such file"),
                (6, "a.md#nowhere", "no heading #nowhere in a.md"),
                (7, "../doc/gone.png", "no such file"),
                (8, "../../elsewhere.md", "leaves the repository"),
                (9, "#nowhere", "no heading #nowhere in b.md"),
            ])

    def test_set_up_is_exactly_the_two_commands_and_ci_runs_them(self):
        setup = [b for b in self.blocks if run_by(b[2])[0] == "ci"]
        self.assertEqual(len(setup), 1)
        self.assertEqual(setup[0][0], "README.md")
        commands = [line for line in setup[0][2].splitlines() if line and not line.startswith("#")]
        self.assertEqual(commands, ["tools/main-job.sh", "tools/test-all.sh"])
        for script in commands:
            self.assertTrue(os.access(SOURCE / script, os.X_OK), script)
        ci = (SOURCE / ".ci/run").read_text()
        self.assertRegex(ci, r"(?m)^exec tools/test-all\.sh\s*$")
        self.assertIn("tools/main-job.sh", (SOURCE / "tests/e2e/image.cmake").read_text())
        self.assertIn("ctest --test-dir build", (SOURCE / "tools/test-all.sh").read_text())

    def test_manual_blocks_name_existing_files(self):
        for name, _, body, line in self.blocks:
            if run_by(body)[0] not in ("manual", "test"):
                continue
            for token in re.findall(r"(?<![\w/$:.-])((?:[\w.-]+/)*[\w.-]+\.(?:sh|json|py))\b", body):
                if token.startswith(("out/", "/")):
                    continue
                self.assertTrue((SOURCE / token).exists(), f"{name}:{line}: {token} does not exist")

    def test_configuration_table_covers_every_variable_with_the_image_values(self):
        rows = table_rows((DOCS / "configuration.md").read_text(), "Configuration")
        documented = {}
        for cells in rows:
            name = cells[0].strip("`")
            self.assertNotIn(name, documented, f"{name} is listed twice")
            documented[name] = cells
        spec_env = json.loads((SOURCE / "spec.json").read_text())["image"]["env"]
        for name in sorted(plan_names() | set(spec_env) | EXTRA_DOCUMENTED):
            self.assertIn(name, documented, f"docs/configuration.md's table lacks {name}")
        for name, cells in documented.items():
            self.assertEqual(len(cells), 4, name)
            expected = f"`{spec_env[name]}`" if name in spec_env else "—"
            self.assertEqual(cells[3], expected, f"{name}: docs/configuration.md image column vs spec.json")

    def test_layout_table_names_every_top_level_folder(self):
        listed = " ".join(cells[0] for cells in table_rows((DOCS / "developing.md").read_text(),
                                                           "Repository layout"))
        for folder in top_level_folders():
            self.assertIn(f"`{folder}/`", listed, f"docs/developing.md's layout lacks {folder}/")
        for path in re.findall(r"`([\w.]+/?)`", listed):
            self.assertTrue((SOURCE / path).exists(), f"docs/developing.md's layout names missing {path}")

    def test_placeholders_for_the_lead(self):
        text = (DOCS / "performance.md").read_text()
        self.assertRegex(text, r"^# Performance\n")
        self.assertIn("\n## CPU GEMM\n", text)


class Help(unittest.TestCase):
    """Each program's --help ends with the docs/ page to read next, and that page exists."""

    def test_help_ends_with_its_docs_page(self):
        for program, page in (("dmlp-launch", "docs/reliability.md"), ("dmlp-train", "docs/configuration.md"),
                              ("dmlp-verify", "docs/verifier.md")):
            done = subprocess.run([str(BIN / program), "--help"], capture_output=True, text=True,
                                  timeout=60, stdin=subprocess.DEVNULL)
            self.assertEqual(done.returncode, 0, done.stderr)
            last = done.stdout.rstrip("\n").splitlines()[-1]
            self.assertIn(page, last, f"{program} --help ends with {last!r}")
            self.assertTrue((SOURCE / page).is_file(), page)


class Commands(unittest.TestCase):
    """Runs the readme-test blocks, in README order, as a reader would."""

    @classmethod
    def setUpClass(cls):
        cls.scratch = Path(tempfile.mkdtemp(prefix="dmlp-readme-"))
        (cls.scratch / "run.sh").symlink_to(SOURCE / "run.sh")
        (cls.scratch / "build").mkdir()
        (cls.scratch / "build" / "bin").symlink_to(BIN)
        cls.port = free_port()
        cls.env = job_env({}, drop=plan_names() | EXTRA_DOCUMENTED, drop_prefixes=("NCCL_", "DMLP_"))
        cls.blocks = [(body, f"{shown(doc)}:{line}") for doc in documents()
                      for info, body, line in fenced_blocks(doc.read_text(), shown(doc))
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
                             f"{line} exited {done.returncode}\n{body}\n"
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
                             f"{line}: the digests of the state file\n{done.stdout}")
            header = json.loads(done.stdout.splitlines()[0])
            self.assertEqual(header["__metadata__"]["params_sha256"], last["params_sha256"])
            checked += 1
        self.assertEqual(checked, 1)


if __name__ == "__main__":
    unittest.main()
