"""h3_config.yaml validation: seed keys load, unknown keys and bad values are named."""

from pathlib import Path

import pytest

from h3_runtime.config import ConfigError, H3Config

REPO = Path(__file__).resolve().parents[1]


def test_repository_config_loads_with_seed_values():
    cfg = H3Config.load(REPO / "h3_config.yaml")
    assert cfg.scheduler.ahaz_alpha == 0.999
    assert cfg.scheduler.hbm_threshold == 0.95
    assert cfg.scheduler.hbf_threshold == 0.3
    assert cfg.hbf.compression_pca_dim >= 128
    assert cfg.hbf.ann_index_type in ("IVF_PQ", "HNSW")


def test_pca_dim_below_128_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match="hbf.compression_pca_dim"):
        H3Config.from_dict({"hbf": {"compression_pca_dim": 64}})


@pytest.mark.parametrize(
    "data, key",
    [
        ({"schedular": {}}, "schedular"),
        ({"scheduler": {"ahaz_alfa": 0.9}}, "scheduler.ahaz_alfa"),
        ({"scheduler": {"ahaz_alpha": "high"}}, "scheduler.ahaz_alpha"),
        ({"hbf": {"ann_index_type": "FLAT"}}, "hbf.ann_index_type"),
        ({"cold_storage": {"ocr_enabled": "yes"}}, "cold_storage.ocr_enabled"),
        ({"scheduler": {"hbm_threshold": 0.2}}, "thresholds"),
        ({"runtime": {"cold_storage_max_gb": 0}}, "runtime.cold_storage_max_gb"),
    ],
)
def test_bad_keys_and_values_are_errors_naming_the_key(data, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        H3Config.from_dict(data)


def test_unknown_key_lists_allowed_keys(tmp_path):
    path = tmp_path / "h3_config.yaml"
    path.write_text("hbf:\n  prefetch_windows: 3\n")
    with pytest.raises(ConfigError) as err:
        H3Config.load(path)
    assert str(path) in str(err.value) and "prefetch_window" in str(err.value)


def test_replace_revalidates():
    cfg = H3Config()
    assert cfg.replace("runtime", block_tokens=32).runtime.block_tokens == 32
    with pytest.raises(ConfigError):
        cfg.replace("runtime", block_tokens=0)
