"""Part 3, kit: the GPU kit (tests/gpu/make_kit.sh) run in a bare Debian 12 root
(tests/gpu/rehearse_kit.sh).
"""

from rehearsal import REPO, section, sh


def part_kit(rehearsal):
    section("the GPU kit in a bare Debian 12 root")
    kit = rehearsal.cache + "/gpu-kit"
    rehearsal.timed("kit (tests/gpu/make_kit.sh %s)" % kit, sh, REPO + "/tests/gpu/make_kit.sh", kit)
    if not rehearsal.failed:
        rehearsal.timed("kit in a bare root (tests/gpu/rehearse_kit.sh)", sh, REPO + "/tests/gpu/rehearse_kit.sh", kit)
