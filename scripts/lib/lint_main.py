"""The command line the repository checks share (scripts/check_docs.py, check_commits.py):
`SCRIPT ROOT` checks the tree at ROOT, `SCRIPT --self-test` checks the checker; anything else
prints the script's usage and exits 2."""
import sys


def lint_main(doc, self_test, check):
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(doc, file=sys.stderr)
        return 2
    return check(sys.argv[1])
