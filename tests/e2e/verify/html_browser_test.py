"""dmlp-verify --html, opened in a real headless Chromium.

Renders the report of a PASS, a FAIL (ranks diverge) and an --against run
(8 ranks x 1,200 steps each, written here as valid receipts), plus a run whose
result.json carries markup, and checks for each page:
  - the browser loaded it from file:// and logged no console message at all
    (the page has no script, and its Content-Security-Policy would log any
    attempt to load something);
  - the DOM (--dump-dom) holds the verdict, the divergence step, and no
    element the run's strings tried to inject;
  - a screenshot is taken (kept in ARTEFACTS for people to look at).
Also the checked-in fixtures: ranks-hash-divergence and against-divergent.

Usage: html_browser_test.py --verify BIN --fixtures DIR --artefacts DIR
Exits 77 (ctest SKIP_RETURN_CODE) when no Chromium is installed
(tools/install-deps.sh installs it for CI); DMLP_CHROMIUM names another binary.
"""

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SKIP = 77
ARGS = None
CHROMIUM = None


def find_chromium():
    for name in (os.environ.get("DMLP_CHROMIUM"), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def float32_repr(value):
    """repr(float(numpy.float32(value))), as the receipts hold losses."""
    return repr(struct.unpack("<f", struct.pack("<f", value))[0])


def digest(*parts):
    return hashlib.sha256(" ".join(map(str, parts)).encode()).hexdigest()


def receipt(step, loss, sha, rank=None):
    record = {"loss": loss, "params_sha256": sha, "step": step}
    if rank is not None:
        record["rank"] = rank
    return json.dumps(record, sort_keys=True) + "\n"


def write_run(directory, ranks=8, steps=1200, seed=0, odd_rank=None, odd_from=None, part_from=None,
              version="0.4.35"):
    """A reference-format run; `odd_rank` holds another state from `odd_from`;
    from `part_from` every rank's loss and state depart (for --against)."""
    directory.mkdir(parents=True)
    per_rank = {rank: [] for rank in range(ranks)}
    metrics = []
    for step in range(1, steps + 1):
        parted = part_from is not None and step >= part_from
        value = 2.3 * math.exp(-step / 300) + 0.25 + 0.02 * math.sin(step / 7 + seed)
        if parted:
            value += 0.05 + 0.2 * (step - part_from) / steps
        loss = float32_repr(value)
        sha = digest("state", step, "parted" if parted else "")
        metrics.append(receipt(step, loss, sha))
        for rank in range(ranks):
            odd = rank == odd_rank and step >= odd_from
            per_rank[rank].append(receipt(step, loss, digest("odd", step) if odd else sha, rank))
    (directory / "metrics.jsonl").write_text("".join(metrics))
    for rank, lines in per_rank.items():
        (directory / f"rank-{rank}.jsonl").write_text("".join(lines))
    last = json.loads(metrics[-1])
    doc = {"complete": True, "dataset": "synthetic", "digest_cost": "c", "digest_policy": "p",
           "final_loss": last["loss"], "final_opt_state_sha256": digest("opt"), "final_params_sha256": digest("params"),
           "heartbeat_timeout_seconds": 60, "jax_version": version,
           "model": {"processes": ranks, "width": 128, "layers": 3},
           "optimizer": "adam", "params_sha256": last["params_sha256"],
           "plan": {"steps": steps, "batch": 256, "seed": 42, "platform": "cpu"},
           "processes": ranks, "rank_files": [f"rank-{r}.jsonl" for r in range(ranks)], "steps": steps,
           "updates_per_metric_step": 1}
    (directory / "result.json").write_text(json.dumps(doc, sort_keys=True, indent=2) + "\n")
    return directory


def chromium(url, *mode):
    profile = tempfile.mkdtemp(prefix="dmlp-chromium-")
    try:
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--hide-scrollbars", f"--user-data-dir={profile}", "--enable-logging=stderr",
                               "--v=0", *mode, url],
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


class HtmlInBrowser(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = Path(tempfile.mkdtemp(prefix="dmlp-html-"))
        cls.artefacts = Path(ARGS.artefacts)
        cls.artefacts.mkdir(parents=True, exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.scratch, ignore_errors=True)

    def render(self, name, run, *extra, exit_code):
        """Runs dmlp-verify --html, then Chromium twice (DOM, screenshot); returns the DOM."""
        page = self.scratch / f"{name}.html"
        done = subprocess.run([ARGS.verify, f"--html={page}", *map(str, extra), str(run)],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, exit_code, done.stdout + done.stderr)
        shutil.copy(page, self.artefacts / f"{name}.html")
        url = page.resolve().as_uri()
        dom = chromium(url, "--dump-dom")
        self.assertEqual(dom.returncode, 0, dom.stderr[-3000:])
        shot = self.artefacts / f"{name}.png"
        shot.unlink(missing_ok=True)
        picture = chromium(url, f"--screenshot={shot}", "--window-size=1200,1600")
        self.assertEqual(picture.returncode, 0, picture.stderr[-3000:])
        self.assertGreater(shot.stat().st_size, 10000, "the screenshot is not blank")
        for log in (dom.stderr, picture.stderr):
            console = [line for line in log.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
            self.assertEqual(console, [], "the page logged to the console")
        self.assertNotIn("<script", dom.stdout)
        return dom.stdout

    def test_pass(self):
        run = write_run(self.scratch / "pass-run")
        dom = self.render("pass", run, exit_code=0)
        self.assertIn('<h1 id="verdict">PASS</h1>', dom)
        self.assertIn("None: every step that was compared agrees.", dom)
        self.assertIn("<th>last complete step</th><td>1200</td>", dom)
        self.assertIn("every rank agrees with the others at every step", dom)

    def test_fail_ranks_diverge(self):
        run = write_run(self.scratch / "fail-run", odd_rank=5, odd_from=700)
        dom = self.render("fail-divergence", run, exit_code=1)
        self.assertIn('<h1 id="verdict">FAIL</h1>', dom)
        self.assertIn('Ranks disagree first at step <b class="step">700</b>, in the digest (params_sha256) only; '
                      "ranks with equal records: {0,1,2,3,4,6,7} {5}.", dom)
        self.assertIn("<li>rank 5: differs at steps 700–1200</li>", dom)
        self.assertIn("<code>ranks.hash_divergence</code>", dom)

    def test_against(self):
        one = write_run(self.scratch / "against-a")
        two = write_run(self.scratch / "against-b", part_from=900)
        dom = self.render("against", two, "--against", one, exit_code=1)
        self.assertIn('<h1 id="verdict">FAIL</h1>', dom)
        self.assertIn('The two runs part at step <b class="step">900</b>: they differ in the loss and the digest '
                      "(params_sha256).", dom)
        self.assertEqual(dom.count('class="curve-'), 4, "two curves and their legend lines")

    def test_markup_in_the_run_renders_as_text(self):
        run = write_run(self.scratch / "hostile-run", ranks=2, steps=20,
                        version="<script>alert(1)</script></svg><img src=x onerror=alert(2)>")
        dom = self.render("hostile", run, exit_code=0)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;&lt;/svg&gt;&lt;img src=x onerror=alert(2)&gt;", dom)
        self.assertNotIn("<img", dom)

    def test_checked_in_fixtures(self):
        fixtures = Path(ARGS.fixtures)
        dom = self.render("fixture-ranks-hash-divergence", fixtures / "ranks-hash-divergence", exit_code=1)
        self.assertIn('Ranks disagree first at step <b class="step">4</b>', dom)
        dom = self.render("fixture-against-divergent", fixtures / "against-divergent", "--against",
                          fixtures / "complete-dmlp-2ranks", exit_code=1)
        self.assertIn('The two runs part at step <b class="step">4</b>', dom)


def main():
    global ARGS, CHROMIUM
    parser = argparse.ArgumentParser()
    parser.add_argument("--verify", required=True)
    parser.add_argument("--fixtures", required=True)
    parser.add_argument("--artefacts", required=True)
    ARGS, rest = parser.parse_known_args()
    CHROMIUM = find_chromium()
    if CHROMIUM is None:
        print("SKIP: no chromium on PATH (tools/install-deps.sh installs it)")
        return SKIP
    program = unittest.main(argv=[sys.argv[0], "-v", *rest], exit=False)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
