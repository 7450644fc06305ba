"""The sidecar's one Settings object: config.toml and the MEMCUE_* environment, read once."""

from __future__ import annotations

from pathlib import Path

from memcue.sidecar.settings import Settings, load_settings


def test_defaults_without_file_or_environment(tmp_path: Path) -> None:
    settings = load_settings(tmp_path / "absent.toml", env={})
    assert settings == Settings()
    assert settings.hook_recall_limit == 8 and settings.recall_slots == 3 and settings.recall_wait_s == 12.0
    assert settings.answer_cache_ttl_s == 8.0 and settings.embedding_cache_size == 256
    assert not settings.no_model and not settings.disable_vec and settings.error == ""


def test_environment_values_are_read_once_and_bounded(tmp_path: Path) -> None:
    env = {"MEMCUE_HOOK_RECALL_LIMIT": "500", "MEMCUE_RECALL_SLOTS": "0", "MEMCUE_RECALL_WAIT_S": "-1",
           "MEMCUE_ANSWER_CACHE_TTL_S": "0.3", "MEMCUE_RECALL_DELAY_S": "1.5", "MEMCUE_EMBEDDING_CACHE_SIZE": "2",
           "MEMCUE_MODEL_LOAD_DELAY_S": "30", "MEMCUE_NO_MODEL": "1", "MEMCUE_DISABLE_VEC": "1",
           "MEMCUE_RERANK_MODEL": "m", "MEMCUE_RERANK_MODEL_PATH": "/models/m",
           "MEMCUE_ANSWER_CHECK_KEY": "sk-test-7f3a"}
    settings = load_settings(tmp_path / "absent.toml", env=env)
    assert settings.hook_recall_limit == 100 and settings.recall_slots == 1 and settings.recall_wait_s == 0.0
    assert settings.answer_cache_ttl_s == 0.3 and settings.recall_delay_s == 1.5
    assert settings.embedding_cache_size == 2 and settings.model_load_delay_s == 30.0
    assert settings.no_model and settings.disable_vec
    assert settings.rerank_model == "m" and settings.rerank_model_path == "/models/m"
    assert settings.answer_check_key == "sk-test-7f3a" and "sk-test-7f3a" not in repr(settings)


def test_values_that_are_not_numbers_fall_back_to_the_defaults(tmp_path: Path) -> None:
    env = {"MEMCUE_HOOK_RECALL_LIMIT": "many", "MEMCUE_RECALL_SLOTS": "x", "MEMCUE_EMBEDDING_CACHE_SIZE": "big"}
    settings = load_settings(tmp_path / "absent.toml", env=env)
    assert (settings.hook_recall_limit, settings.recall_slots, settings.embedding_cache_size) == (8, 3, 256)


def test_recall_options_carry_the_gate_and_weights(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[recall]\nsupport_gate = false\n[recall.weights.meaning]\nsemantic = 0.8\n[rerank]\nmodel = 3\n")
    settings = load_settings(path, env={})
    options = settings.recall_options()
    assert not options.support_gate and options.weights == {"meaning": {"semantic": 0.8}}
    assert "rerank.model = 3" in settings.error


def test_a_table_memcue_does_not_read_is_named_not_ignored_silently(tmp_path: Path) -> None:
    """Found by a trial: a typo such as ``[recal]`` was ignored without a word, so the setting silently did not
    apply; now it is named with the tables memcue reads, and the rest of the file still applies."""
    path = tmp_path / "config.toml"
    path.write_text('[recal]\nsupport_gate = false\n\n[hooks]\nprompt_block = "compact"\n')
    settings = load_settings(path, env={}, quiet=True)
    assert "[recal] is no table memcue reads" in settings.error and "recall" in settings.error
    assert settings.support_gate is True and settings.prompt_block == "compact"
    path.write_text('[recall]\nsupport_gate = false\n')
    assert load_settings(path, env={}, quiet=True).error == ""


def test_a_key_memcue_does_not_read_in_a_table_it_reads_is_named(tmp_path: Path) -> None:
    """A typo inside a known table (``idle_exit_minute``) was ignored without a word; now it is named with the
    keys the table takes, and every key memcue reads passes without a problem."""
    path = tmp_path / "config.toml"
    path.write_text('[sidecar]\nidle_exit_minute = 5\n\n[hooks]\nprompt_block = "compact"\npromptblock = "off"\n')
    settings = load_settings(path, env={}, quiet=True)
    assert "sidecar.idle_exit_minute: unknown key, ignored (known: idle_exit_minutes)" in settings.error
    assert "hooks.promptblock: unknown key" in settings.error and settings.prompt_block == "compact"
    path.write_text('[recall]\nsupport_gate = true\n[recall.weights.meaning]\nsemantic = 0.8\n'
                    '[rerank]\nmodel = ""\n'
                    '[answer_check]\nurl = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key_env = "K"\n'
                    'allow_remote = false\ntimeout_s = 2\n'
                    '[hooks]\nprompt_block = "full"\n[sidecar]\nidle_exit_minutes = 30\n'
                    '[model]\nname = ""\npath = ""\n[sources]\noff = []\n')
    assert load_settings(path, env={}, quiet=True).error == ""
