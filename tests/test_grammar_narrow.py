"""The grammar builds, for a command line naming a command, only that command's parser.

Every command line builds the grammar before anything else; building all 35
commands' parsers (argparse looks up a translation for each of their strings)
cost every ``snapshotter`` call about 7 ms (issue #51). A command line that
names a command needs only that one: argparse picks the command among its words.
The parse must not change: the same namespace, the same usage errors (naming
every command), the same help.
"""

from __future__ import annotations

import argparse

import pytest

from snapshotter.frontends.shared import arguments


def choices(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def test_a_command_line_naming_a_command_builds_only_its_parser() -> None:
    assert choices(arguments._parser(frozenset(["log", "-n", "20"]))) == {"log"}
    assert choices(arguments._parser(frozenset(["track", "-m", "x"]))) == {"snapshot", "track"}
    assert choices(arguments._parser(frozenset(["--home", "/tmp/h", "log"]))) == {"log"}


@pytest.mark.parametrize("word", ["-h", "--help", "--he", "-hC"])
def test_what_may_ask_for_help_builds_every_command(word: str) -> None:
    assert choices(arguments._parser(frozenset(["log", word]))) == choices(arguments._parser())


def test_the_list_of_command_words_is_the_grammars() -> None:
    assert arguments.COMMAND_WORDS == arguments.command_names() == choices(arguments._parser())


LINES = [
    ["log", "-n", "20"],
    ["show", "@"],
    ["--home", "/tmp/h", "where"],
    ["-C", "show", "log"],  # a command's name as an option's value
    ["diff", "@~2", "--stat", "--", "src/"],
    ["track", "-m", "x", "--label", "status"],
    ["turn", "revert", "2", "--dry-run"],
    ["hooks", "status", "--json"],
]


@pytest.mark.parametrize("argv", LINES)
def test_the_parse_is_the_whole_grammars(argv: list[str]) -> None:
    narrow = arguments.parse(argv)
    head = argv[: argv.index("--")] if "--" in argv else argv
    whole, extra = arguments._parser().parse_known_args(head)
    assert extra == []
    whole.command = arguments.ALIASES.get(whole.command, whole.command)
    assert {k: v for k, v in vars(narrow).items() if k not in ("paths", "dashed")} == {
        k: v for k, v in vars(whole).items() if k != "paths"
    }


@pytest.mark.parametrize("argv", [["bogus", "log"], ["--home", "log", "statsu"], ["log", "-n", "x"]])
def test_a_usage_error_is_the_whole_grammars(argv: list[str]) -> None:
    with pytest.raises(arguments.UsageError) as narrow:
        arguments.parse(argv)
    with pytest.raises(arguments.UsageError) as whole:
        arguments._parser().parse_known_args(argv)
    assert str(narrow.value) == str(whole.value)


def test_an_unknown_option_is_named_by_the_commands_parser() -> None:
    with pytest.raises(arguments.UsageError) as raised:
        arguments.parse(["--home", "h", "log", "--bogus"])
    assert str(raised.value) == "snapshotter log: error: unrecognized arguments: --bogus"
    assert raised.value.usage == "see `snapshotter log --help`"


def test_help_after_a_command_value_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        arguments.parse(["--home", "log", "--help"])
    shown = capsys.readouterr().out
    assert "sessions" in shown and "checkpoint" in shown
