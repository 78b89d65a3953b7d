"""spirefleet: the trainer-side reader of label shards (docs/trainer.md)."""

from .shard import (FORECAST_COLUMNS, FORECAST_H, FORMAT_VERSION, SCHEMA_VERSION, VALUE_BINS,
                    VALUE_SUPPORT, FrameCache, Shard, ShardError, manifest_to_dict, open_shard,
                    parse_start, record_to_dict, start_summary, tensor_to_numpy, value_of_bins)
from .dataset import SHUFFLE_WINDOW, ShardDataset, expand_paths, pad_batch

__all__ = ["FORECAST_COLUMNS", "FORECAST_H", "FORMAT_VERSION", "SCHEMA_VERSION", "SHUFFLE_WINDOW",
           "VALUE_BINS", "VALUE_SUPPORT", "FrameCache", "Shard", "ShardError", "ShardDataset",
           "expand_paths", "manifest_to_dict", "open_shard", "pad_batch", "parse_start",
           "record_to_dict", "start_summary", "tensor_to_numpy", "value_of_bins"]
