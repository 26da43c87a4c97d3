"""Tests for xdap.maps: the DAP examples, the appendix trap, properties, and
one test per validation rule of map_from_dim_dicts.

The example data below is transcribed from the DAP 0.10.0 spec, chapter 2:
per process its grid coordinate, its buffer and its printed 'dim_data'.  The
5x9 (and 5x9x3) examples' full arrays are ``arange``-based, so each buffer
must equal ``full[np.ix_(*global_indices)]``.
"""
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from xdap.maps import BlockMap, CyclicMap, Map, UnstructuredMap
from xdap.protocols.dap_dims import map_from_dim_dicts, num_owned_indices

EXAMPLES_0_10 = {
    '2.1': [
        ((0, 0), [[0.2, 0.6, 0.9, 0.6, 0.8, 0.4, 0.2, 0.2, 0.3, 0.5]], (
            {'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 2, 'start': 0, 'stop': 1},
            {'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 1, 'size': 10, 'start': 0, 'stop': 10},
        )),
        ((1, 0), [[0.9, 0.2, 1.0, 0.4, 0.5, 0.0, 0.6, 0.8, 0.6, 1.0]], (
            {'dist_type': 'b', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 2, 'start': 1, 'stop': 2},
            {'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 1, 'size': 10, 'start': 0, 'stop': 10},
        )),
    ],
    '2.2': [
        ((0,), [0.2, 0.6, 0.9, 0.6, 0.8, 0.4, 0.2, 0.2, 0.3, 0.9], (
            {'dist_type': 'b', 'padding': (1, 1), 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 18, 'start': 0, 'stop': 10},
        )),
        ((1,), [0.3, 0.9, 0.2, 1.0, 0.4, 0.5, 0.0, 0.6, 0.8, 0.6], (
            {'dist_type': 'b', 'padding': (1, 1), 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 18, 'start': 8, 'stop': 18},
        )),
    ],
    '2.3': [
        ((0,), [0.7, 0.5, 0.9, 0.2, 0.7, 0.0, 0.5], (
            {'dist_type': 'u', 'indices': [19, 1, 0, 12, 2, 15, 4], 'proc_grid_rank': 0, 'proc_grid_size': 3, 'size': 30},
        )),
        ((1,), [0.1, 0.5, 0.9], (
            {'dist_type': 'u', 'indices': [6, 13, 3], 'proc_grid_rank': 1, 'proc_grid_size': 3, 'size': 30},
        )),
        ((2,), [0.1, 0.8, 0.4, 0.8, 0.2, 0.4, 0.4, 0.3, 0.5, 0.7, 0.4, 0.7, 0.6, 0.2, 0.8, 0.5, 0.3, 0.8, 0.4, 0.2], (
            {'dist_type': 'u', 'indices': [10, 25, 5, 21, 7, 18, 11, 26, 29, 24, 23, 28, 14, 20, 9, 16, 27, 8, 17, 22], 'proc_grid_rank': 2, 'proc_grid_size': 3, 'size': 30},
        )),
    ],
    '2.4': [
        ((0, 0), [[0, 1, 2, 3, 4, 5, 6, 7, 8], [9, 10, 11, 12, 13, 14, 15, 16, 17]], (
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 0, 'proc_grid_size': 3, 'size': 5, 'start': 0, 'stop': 2},
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 0, 'proc_grid_size': 1, 'size': 9, 'start': 0, 'stop': 9},
        )),
        ((1, 0), [[18, 19, 20, 21, 22, 23, 24, 25, 26], [27, 28, 29, 30, 31, 32, 33, 34, 35]], (
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 1, 'proc_grid_size': 3, 'size': 5, 'start': 2, 'stop': 4},
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 0, 'proc_grid_size': 1, 'size': 9, 'start': 0, 'stop': 9},
        )),
        ((2, 0), [[36, 37, 38, 39, 40, 41, 42, 43, 44]], (
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 2, 'proc_grid_size': 3, 'size': 5, 'start': 4, 'stop': 5},
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 0, 'proc_grid_size': 1, 'size': 9, 'start': 0, 'stop': 9},
        )),
    ],
    '2.5': [
        ((0, 0), [[0, 1, 2], [9, 10, 11], [18, 19, 20], [27, 28, 29], [36, 37, 38]], (
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 0, 'proc_grid_size': 1, 'size': 5, 'start': 0, 'stop': 5},
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 0, 'proc_grid_size': 3, 'size': 9, 'start': 0, 'stop': 3},
        )),
        ((0, 1), [[3, 4, 5], [12, 13, 14], [21, 22, 23], [30, 31, 32], [39, 40, 41]], (
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 0, 'proc_grid_size': 1, 'size': 5, 'start': 0, 'stop': 5},
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 1, 'proc_grid_size': 3, 'size': 9, 'start': 3, 'stop': 6},
        )),
        ((0, 2), [[6, 7, 8], [15, 16, 17], [24, 25, 26], [33, 34, 35], [42, 43, 44]], (
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 0, 'proc_grid_size': 1, 'size': 5, 'start': 0, 'stop': 5},
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 2, 'proc_grid_size': 3, 'size': 9, 'start': 6, 'stop': 9},
        )),
    ],
    '2.6': [
        ((0, 0), [[0, 1, 2, 3, 4], [9, 10, 11, 12, 13], [18, 19, 20, 21, 22]], (
            {'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5, 'start': 0, 'stop': 3},
            {'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9, 'start': 0, 'stop': 5},
        )),
        ((0, 1), [[5, 6, 7, 8], [14, 15, 16, 17], [23, 24, 25, 26]], (
            {'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5, 'start': 0, 'stop': 3},
            {'dist_type': 'b', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9, 'start': 5, 'stop': 9},
        )),
        ((1, 0), [[27, 28, 29, 30, 31], [36, 37, 38, 39, 40]], (
            {'dist_type': 'b', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5, 'start': 3, 'stop': 5},
            {'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9, 'start': 0, 'stop': 5},
        )),
        ((1, 1), [[32, 33, 34, 35], [41, 42, 43, 44]], (
            {'dist_type': 'b', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5, 'start': 3, 'stop': 5},
            {'dist_type': 'b', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9, 'start': 5, 'stop': 9},
        )),
    ],
    '2.7': [
        ((0, 0), [[0, 2, 4, 6, 8], [9, 11, 13, 15, 17], [18, 20, 22, 24, 26]], (
            {'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5, 'start': 0, 'stop': 3},
            {'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9, 'start': 0},
        )),
        ((0, 1), [[1, 3, 5, 7], [10, 12, 14, 16], [19, 21, 23, 25]], (
            {'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5, 'start': 0, 'stop': 3},
            {'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9, 'start': 1},
        )),
        ((1, 0), [[27, 29, 31, 33, 35], [36, 38, 40, 42, 44]], (
            {'dist_type': 'b', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5, 'start': 3, 'stop': 5},
            {'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9, 'start': 0},
        )),
        ((1, 1), [[28, 30, 32, 34], [37, 39, 41, 43]], (
            {'dist_type': 'b', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5, 'start': 3, 'stop': 5},
            {'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9, 'start': 1},
        )),
    ],
    '2.8': [
        ((0, 0), [[0, 2, 4, 6, 8], [18, 20, 22, 24, 26], [36, 38, 40, 42, 44]], (
            {'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5, 'start': 0},
            {'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9, 'start': 0},
        )),
        ((0, 1), [[1, 3, 5, 7], [19, 21, 23, 25], [37, 39, 41, 43]], (
            {'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5, 'start': 0},
            {'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9, 'start': 1},
        )),
        ((1, 0), [[9, 11, 13, 15, 17], [27, 29, 31, 33, 35]], (
            {'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5, 'start': 1},
            {'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9, 'start': 0},
        )),
        ((1, 1), [[10, 12, 14, 16], [28, 30, 32, 34]], (
            {'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5, 'start': 1},
            {'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9, 'start': 1},
        )),
    ],
    '2.9': [
        ((0, 0), [[0, 1]], (
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5, 'start': 0, 'stop': 1},
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9, 'start': 0, 'stop': 2},
        )),
        ((0, 1), [[2, 3, 4, 5, 6, 7, 8]], (
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5, 'start': 0, 'stop': 1},
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9, 'start': 2, 'stop': 9},
        )),
        ((1, 0), [[9, 10], [18, 19], [27, 28], [36, 37]], (
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5, 'start': 1, 'stop': 5},
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9, 'start': 0, 'stop': 2},
        )),
        ((1, 1), [[11, 12, 13, 14, 15, 16, 17], [20, 21, 22, 23, 24, 25, 26], [29, 30, 31, 32, 33, 34, 35], [38, 39, 40, 41, 42, 43, 44]], (
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5, 'start': 1, 'stop': 5},
            {'dist_type': 'b', 'padding': [0, 0], 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9, 'start': 2, 'stop': 9},
        )),
    ],
    '2.10': [
        ((0, 0), [[0, 1, 4, 5, 8], [9, 10, 13, 14, 17], [36, 37, 40, 41, 44]], (
            {'block_size': 2, 'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5, 'start': 0},
            {'block_size': 2, 'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9, 'start': 0},
        )),
        ((0, 1), [[2, 3, 6, 7], [11, 12, 15, 16], [38, 39, 42, 43]], (
            {'block_size': 2, 'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5, 'start': 0},
            {'block_size': 2, 'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9, 'start': 2},
        )),
        ((1, 0), [[18, 19, 22, 23, 26], [27, 28, 31, 32, 35]], (
            {'block_size': 2, 'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5, 'start': 2},
            {'block_size': 2, 'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9, 'start': 0},
        )),
        ((1, 1), [[20, 21, 24, 25], [29, 30, 33, 34]], (
            {'block_size': 2, 'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5, 'start': 2},
            {'block_size': 2, 'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9, 'start': 2},
        )),
    ],
    '2.11': [
        ((0, 0), [[29, 30, 34, 28], [2, 3, 7, 1]], (
            {'dist_type': 'u', 'indices': [3, 0], 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5},
            {'dist_type': 'u', 'indices': [2, 3, 7, 1], 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9},
        )),
        ((0, 1), [[33, 32, 35, 27, 31], [6, 5, 8, 0, 4]], (
            {'dist_type': 'u', 'indices': [3, 0], 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5},
            {'dist_type': 'u', 'indices': [6, 5, 8, 0, 4], 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9},
        )),
        ((1, 0), [[38, 39, 43, 37], [20, 21, 25, 19], [11, 12, 16, 10]], (
            {'dist_type': 'u', 'indices': [4, 2, 1], 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5},
            {'dist_type': 'u', 'indices': [2, 3, 7, 1], 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9},
        )),
        ((1, 1), [[42, 41, 44, 36, 40], [24, 23, 26, 18, 22], [15, 14, 17, 9, 13]], (
            {'dist_type': 'u', 'indices': [4, 2, 1], 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5},
            {'dist_type': 'u', 'indices': [6, 5, 8, 0, 4], 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9},
        )),
    ],
    '2.12': [
        ((0, 0, 0), [[[0, 2], [3, 5], [6, 8], [9, 11], [12, 14]], [[54, 56], [57, 59], [60, 62], [63, 65], [66, 68]], [[108, 110], [111, 113], [114, 116], [117, 119], [120, 122]]], (
            {'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5, 'start': 0},
            {'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9, 'start': 0, 'stop': 5},
            {'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 3, 'start': 0},
        )),
        ((0, 0, 1), [[[1], [4], [7], [10], [13]], [[55], [58], [61], [64], [67]], [[109], [112], [115], [118], [121]]], (
            {'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5, 'start': 0},
            {'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9, 'start': 0, 'stop': 5},
            {'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 3, 'start': 1},
        )),
        ((0, 1, 0), [[[15, 17], [18, 20], [21, 23], [24, 26]], [[69, 71], [72, 74], [75, 77], [78, 80]], [[123, 125], [126, 128], [129, 131], [132, 134]]], (
            {'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5, 'start': 0},
            {'dist_type': 'b', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9, 'start': 5, 'stop': 9},
            {'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 3, 'start': 0},
        )),
        ((0, 1, 1), [[[16], [19], [22], [25]], [[70], [73], [76], [79]], [[124], [127], [130], [133]]], (
            {'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 5, 'start': 0},
            {'dist_type': 'b', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9, 'start': 5, 'stop': 9},
            {'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 3, 'start': 1},
        )),
        ((1, 0, 0), [[[27, 29], [30, 32], [33, 35], [36, 38], [39, 41]], [[81, 83], [84, 86], [87, 89], [90, 92], [93, 95]]], (
            {'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5, 'start': 1},
            {'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9, 'start': 0, 'stop': 5},
            {'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 3, 'start': 0},
        )),
        ((1, 0, 1), [[[28], [31], [34], [37], [40]], [[82], [85], [88], [91], [94]]], (
            {'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5, 'start': 1},
            {'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 9, 'start': 0, 'stop': 5},
            {'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 3, 'start': 1},
        )),
        ((1, 1, 0), [[[42, 44], [45, 47], [48, 50], [51, 53]], [[96, 98], [99, 101], [102, 104], [105, 107]]], (
            {'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5, 'start': 1},
            {'dist_type': 'b', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9, 'start': 5, 'stop': 9},
            {'dist_type': 'c', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'size': 3, 'start': 0},
        )),
        ((1, 1, 1), [[[43], [46], [49], [52]], [[97], [100], [103], [106]]], (
            {'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 5, 'start': 1},
            {'dist_type': 'b', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 9, 'start': 5, 'stop': 9},
            {'dist_type': 'c', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'size': 3, 'start': 1},
        )),
    ],
}

# DAP 0.9.0, chapter 7 ('n' and 0.9.0 padded start/stop); buffers are random
# data in the spec, so only their lengths matter except in 7.2 whose ghost
# cells repeat the neighbour's values.
EXAMPLES_0_9 = {
    "7.1": [
        ((0, 0), [[0.2, 0.6, 0.9, 0.6, 0.8, 0.4, 0.2, 0.2, 0.3, 0.5]], (
            {'size': 2, 'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'start': 0, 'stop': 1},
            {'size': 10, 'dist_type': 'n'},
        )),
        ((1, 0), [[0.9, 0.2, 1.0, 0.4, 0.5, 0.0, 0.6, 0.8, 0.6, 1.0]], (
            {'size': 2, 'dist_type': 'b', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'start': 1, 'stop': 2},
            {'size': 10, 'dist_type': 'n'},
        )),
    ],
    "7.2": [
        ((0,), [0.2, 0.6, 0.9, 0.6, 0.8, 0.4, 0.2, 0.2, 0.3, 0.9], (
            {'size': 18, 'dist_type': 'b', 'proc_grid_rank': 0, 'proc_grid_size': 2, 'start': 0, 'stop': 9, 'padding': (1, 1)},
        )),
        ((1,), [0.3, 0.9, 0.2, 1.0, 0.4, 0.5, 0.0, 0.6, 0.8, 0.6], (
            {'size': 18, 'dist_type': 'b', 'proc_grid_rank': 1, 'proc_grid_size': 2, 'start': 9, 'stop': 18, 'padding': (1, 1)},
        )),
    ],
    "7.3": [
        ((0,), [0.7, 0.5, 0.9, 0.2, 0.7, 0.0, 0.5], (
            {'size': 30, 'dist_type': 'u', 'proc_grid_rank': 0, 'proc_grid_size': 3, 'indices': [19, 1, 0, 12, 2, 15, 4]},
        )),
        ((1,), [0.1, 0.5, 0.9], (
            {'size': 30, 'dist_type': 'u', 'proc_grid_rank': 1, 'proc_grid_size': 3, 'indices': [6, 13, 3]},
        )),
        ((2,), [0.1, 0.8, 0.4, 0.8, 0.2, 0.4, 0.4, 0.3, 0.5, 0.7, 0.4, 0.7, 0.6, 0.2, 0.8, 0.5, 0.3, 0.8, 0.4, 0.2], (
            {'size': 30, 'dist_type': 'u', 'proc_grid_rank': 2, 'proc_grid_size': 3,
             'indices': [10, 25, 5, 21, 7, 18, 11, 26, 29, 24, 23, 28, 14, 20, 9, 16, 27, 8, 17, 22]},
        )),
    ],
}


def example_maps(procs, version):
    """One map per dimension, built from the dicts of the processes at each
    grid coordinate (the spec requires them identical along an axis)."""
    ndim = len(procs[0][2])
    maps = []
    for d in range(ndim):
        by_rank = {}
        for coord, buf, dims in procs:
            entry = (dims[d], np.shape(buf)[d])
            prev = by_rank.setdefault(coord[d] if d < len(coord) else 0, entry)
            assert _same(prev[0], entry[0]) and prev[1] == entry[1]
        ranks = sorted(by_rank)
        assert ranks == list(range(len(ranks)))
        maps.append(map_from_dim_dicts([by_rank[p][0] for p in ranks],
                                       [by_rank[p][1] for p in ranks], version))
    return maps


def _same(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def normalised(expected, version="0.10.0"):
    """The spec dict as dim_dict() spells it: 'b' always has a padding tuple,
    'u' always has one_to_one and int64 indices."""
    d = dict(expected)
    if d["dist_type"] == "b":
        d["padding"] = tuple(d.get("padding", (0, 0)))
    if d["dist_type"] == "u":
        d.setdefault("one_to_one", False)
        d["indices"] = np.asarray(d["indices"], dtype=np.int64)
    return d


def assert_dict_equal(got, want):
    assert got.keys() == want.keys(), (got, want)
    for k in want:
        if isinstance(want[k], np.ndarray):
            assert got[k].dtype == np.int64 and np.array_equal(got[k], want[k]), k
        else:
            assert got[k] == want[k] and type(got[k]) is type(want[k]), (k, got[k], want[k])


ARANGE_EXAMPLES = [k for k in EXAMPLES_0_10 if k not in ("2.1", "2.2", "2.3")]


# ---------------------------------------------------------------- examples

@pytest.mark.parametrize("name", ARANGE_EXAMPLES)
def test_example_buffers_match_global_indices(name):
    procs = EXAMPLES_0_10[name]
    maps = example_maps(procs, "0.10.0")
    shape = tuple(m.size for m in maps)
    full = np.arange(math.prod(shape)).reshape(shape)
    for coord, buf, _ in procs:
        gis = [m.global_indices(c) for m, c in zip(maps, coord)]
        assert np.array_equal(full[np.ix_(*gis)], np.array(buf)), (name, coord)


@pytest.mark.parametrize("name", list(EXAMPLES_0_10))
def test_example_dim_dicts_reproduced(name):
    procs = EXAMPLES_0_10[name]
    maps = example_maps(procs, "0.10.0")
    for coord, _, dims in procs:
        for m, c, want in zip(maps, coord, dims):
            assert_dict_equal(m.to_dim_dict(c), normalised(want))
            assert num_owned_indices(m.to_dim_dict(c)) == m.owned_count(c)


def test_example_2_1_block_block():
    rows, cols = example_maps(EXAMPLES_0_10["2.1"], "0.10.0")
    assert rows == BlockMap(2, 2) and cols == BlockMap(10, 1)
    assert [rows.global_indices(p).tolist() for p in (0, 1)] == [[0], [1]]
    assert cols.global_indices(0).tolist() == list(range(10))


@pytest.mark.parametrize("name,version", [("2.2", "0.10.0"), ("7.2", "0.9.0")])
def test_example_block_with_padding(name, version):
    procs = (EXAMPLES_0_10 if version == "0.10.0" else EXAMPLES_0_9)[name]
    (m,) = example_maps(procs, version)
    assert m == BlockMap(18, 2, padding=(1, 1))
    assert m.bounds == (0, 9, 18)
    # B 1 .. 8 C  /  C 9 .. 16 B
    assert m.global_indices(0).tolist() == list(range(0, 10))
    assert m.global_indices(1).tolist() == list(range(8, 18))
    assert [m.owned_count(p) for p in (0, 1)] == [9, 9]
    assert [m.owned_local_slice(p) for p in (0, 1)] == [slice(0, 9), slice(1, 10)]
    # the ghost cells hold the neighbour's values: assemble the owned parts
    # into the full array, and every buffer is that array at its indices
    full = np.empty(18)
    for (p,), buf, _ in procs:
        full[m.global_indices(p)[m.owned_local_slice(p)]] = np.array(buf)[m.owned_local_slice(p)]
    for (p,), buf, _ in procs:
        assert np.array_equal(full[m.global_indices(p)], buf)
    # both dialects of the same map
    assert (m.to_dim_dict(0)["start"], m.to_dim_dict(0)["stop"]) == (0, 10)
    assert (m.to_dim_dict(1)["start"], m.to_dim_dict(1)["stop"]) == (8, 18)
    assert (m.to_dim_dict(0, "0.9.0")["start"], m.to_dim_dict(0, "0.9.0")["stop"]) == (0, 9)
    assert (m.to_dim_dict(1, "0.9.0")["start"], m.to_dim_dict(1, "0.9.0")["stop"]) == (9, 18)
    other = EXAMPLES_0_9["7.2"] if version == "0.10.0" else EXAMPLES_0_10["2.2"]
    for (p,), _, (want,) in other:
        assert_dict_equal(m.to_dim_dict(p, "0.9.0" if version == "0.10.0" else "0.10.0"),
                          normalised(want))
    assert m.owners([0, 8, 9, 17])[0].tolist() == [0, 0, 1, 1]
    assert m.owners([0, 8, 9, 17])[1].tolist() == [0, 8, 1, 9]
    assert m.local_from_global(0, [9]).tolist() == [9]      # its ghost cell
    assert m.local_from_global(1, [8]).tolist() == [0]


@pytest.mark.parametrize("name,version", [("2.3", "0.10.0"), ("7.3", "0.9.0")])
def test_example_unstructured(name, version):
    procs = (EXAMPLES_0_10 if version == "0.10.0" else EXAMPLES_0_9)[name]
    (m,) = example_maps(procs, version)
    assert isinstance(m, UnstructuredMap) and m.size == 30 and not m.one_to_one
    for (p,), buf, (d,) in procs:
        assert m.global_indices(p).tolist() == list(d["indices"])
        assert m.local_size(p) == len(buf)
        assert_dict_equal(m.to_dim_dict(p, version), normalised(d))
    ranks, local = m.owners(np.arange(30))
    assert ranks[19] == 0 and local[19] == 0 and ranks[3] == 1 and local[3] == 2
    assert ranks[22] == 2 and local[22] == 19


def test_example_7_1_undistributed_n():
    rows, cols = example_maps(EXAMPLES_0_9["7.1"], "0.9.0")
    assert rows == BlockMap(2, 2)
    assert cols == BlockMap(10, 1) == map_from_dim_dicts([{}], [10])
    assert cols.global_indices(0).tolist() == list(range(10))
    assert_dict_equal(cols.to_dim_dict(0, "0.9.0"), {
        "dist_type": "b", "size": 10, "proc_grid_size": 1, "proc_grid_rank": 0,
        "start": 0, "stop": 10, "padding": (0, 0)})


def test_n_with_padding_is_boundary_padding():
    m = map_from_dim_dicts([{"dist_type": "n", "size": 6, "padding": (1, 2)}], [6], "0.9.0")
    assert m == BlockMap(6, 1, padding=(1, 2))
    assert m.owned_count(0) == 6 and m.local_size(0) == 6
    assert m.owned_local_slice(0) == slice(0, 6)


def test_empty_dict_alias():
    m = map_from_dim_dicts([{}], [7])
    assert m == BlockMap(7, 1) and m.global_indices(0).tolist() == list(range(7))
    assert map_from_dim_dicts([{}], [0]) == BlockMap(0, 1)


# ---------------------------------------------------------------- cyclic truths

def test_appendix_trap_block_cyclic_counts():
    m = CyclicMap(7, 2, block_size=2)
    assert [m.owned_count(p) for p in (0, 1)] == [4, 3]          # not the appendix's 5, 2
    assert m.global_indices(0).tolist() == [0, 1, 4, 5]
    assert m.global_indices(1).tolist() == [2, 3, 6]
    dicts = [m.to_dim_dict(p) for p in (0, 1)]
    assert dicts[1] == {"dist_type": "c", "size": 7, "proc_grid_size": 2,
                        "proc_grid_rank": 1, "start": 2, "block_size": 2}
    assert [num_owned_indices(d) for d in dicts] == [4, 3]
    assert map_from_dim_dicts(dicts, [4, 3]) == m
    with pytest.raises(ValueError, match=r"buffer length of grid rank 0 \(5\).*owned count \(4\)"):
        map_from_dim_dicts(dicts, [5, 2])


def test_num_owned_indices_cyclic_without_block_size_key():
    # the appendix reads dd['block_size'] even when absent
    d = {"dist_type": "c", "size": 9, "proc_grid_size": 2, "proc_grid_rank": 1, "start": 1}
    assert num_owned_indices(d) == 4


def test_cyclic_rank_owning_nothing_exports_grid_rank_times_block_size():
    """The reference validator's rule: start = proc_grid_rank * block_size,
    past size for a rank that owns nothing; the clamped spelling (size,
    spec 1.6.4) is accepted on import too."""
    m = CyclicMap(5, 4, block_size=2)
    assert [m.owned_count(p) for p in range(4)] == [2, 2, 1, 0]
    assert [m.to_dim_dict(p)["start"] for p in range(4)] == [0, 2, 4, 6]
    dicts = [m.to_dim_dict(p) for p in range(4)]
    assert map_from_dim_dicts(dicts, [2, 2, 1, 0]) == m
    dicts[3]["start"] = 5                      # start == size is accepted too
    assert map_from_dim_dicts(dicts, [2, 2, 1, 0]) == m


def test_num_owned_indices_other_kinds():
    assert num_owned_indices({"dist_type": "u", "indices": np.arange(4)}) == 4
    assert num_owned_indices({"dist_type": "n", "size": 10}, "0.9.0") == 10
    d = {"dist_type": "b", "size": 18, "proc_grid_size": 2, "proc_grid_rank": 0,
         "start": 0, "stop": 9, "padding": (1, 1)}
    assert num_owned_indices(d, "0.9.0") == 9


# ---------------------------------------------------------------- API details

def test_docstring_examples():
    import doctest
    import xdap.maps
    result = doctest.testmod(xdap.maps)
    assert result.attempted > 0 and result.failed == 0


def test_reprs_and_equality():
    assert repr(BlockMap(5, 2)) == "BlockMap(size=5, grid_size=2, bounds=(0, 3, 5))"
    assert "padding=((0, 1), (1, 0))" in repr(BlockMap(5, 2, padding=[(0, 1), (1, 0)]))
    assert "periodic=True" in repr(BlockMap(5, 2, periodic=True))
    assert repr(CyclicMap(5, 2, 2)) == "CyclicMap(size=5, grid_size=2, block_size=2)"
    assert "UnstructuredMap(size=3" in repr(UnstructuredMap(3, [[0, 2], [1]]))
    assert BlockMap(5, 2) != BlockMap(5, 2, periodic=True)
    assert BlockMap(5, 2) != BlockMap(5, 2, bounds=[0, 2, 5])
    assert BlockMap(5, 1) != CyclicMap(5, 1)
    assert UnstructuredMap(3, [[0, 2], [1]]) != UnstructuredMap(3, [[2, 0], [1]])
    assert UnstructuredMap(3, [[0, 2], [1]]) == UnstructuredMap(3, [[0, -1], [-2]])


def test_maps_are_immutable_and_hashable_by_value():
    maps = [BlockMap(5, 2), BlockMap(5, 2, padding=(1, 1), periodic=True), CyclicMap(5, 2, 2),
            UnstructuredMap(3, [[0, 2], [1]])]
    twins = [BlockMap(5, 2, bounds=[0, 3, 5]), BlockMap(5, 2, padding=[(1, 1)] * 2, periodic=True),
             CyclicMap(5, 2, block_size=2), UnstructuredMap(3, [[0, -1], [-2]])]
    for m, t in zip(maps, twins):
        assert m == t and hash(m) == hash(t) and m.fingerprint() == t.fingerprint()
        assert len({m, t}) == 1
        with pytest.raises(AttributeError, match="immutable"):
            m.size = 7
    assert len({m.fingerprint() for m in maps}) == len(maps)
    # the JSON form rebuilds the same map
    for m in maps:
        assert Map.from_json(m.to_json(), m.json_arrays()) == m
    assert not maps[-1].indices[0].flags.writeable


def test_owners_keeps_shape_and_accepts_lists():
    m = CyclicMap(10, 3)
    ranks, local = m.owners(np.arange(10).reshape(2, 5))
    assert ranks.shape == local.shape == (2, 5)
    assert ranks.dtype == local.dtype == np.int64
    assert m.owners([4])[0].tolist() == [1]
    assert BlockMap(10, 3).owners(np.arange(10, dtype=np.int32))[1].dtype == np.int64


def test_unstructured_duplicates_owner_is_lowest_rank():
    m = UnstructuredMap(4, [[3, 1], [0, 1, 2], [1, 3]])
    ranks, local = m.owners(np.arange(4))
    assert ranks.tolist() == [1, 0, 1, 0] and local.tolist() == [0, 1, 2, 0]
    assert m.local_from_global(2, [3, 1]).tolist() == [1, 0]
    assert [m.owned_count(p) for p in range(3)] == [2, 3, 2]


def test_global_indices_is_int64_and_unstructured_read_only():
    for m in (BlockMap(5, 2), CyclicMap(5, 2), UnstructuredMap(5, [[0, 1], [2, 3, 4]])):
        assert m.global_indices(1).dtype == np.int64
    u = UnstructuredMap(2, [[1, 0]])
    with pytest.raises(ValueError):
        u.global_indices(0)[0] = 5


@pytest.mark.parametrize("m", [BlockMap(5, 2, padding=(1, 1)), CyclicMap(5, 2, 2),
                               UnstructuredMap(5, [[4, 0], [1, 2, 3]])])
def test_translation_errors_name_the_value(m):
    with pytest.raises(ValueError, match=r"global index 5 out of range \[0, 5\)"):
        m.owners([0, 5])
    with pytest.raises(ValueError, match=r"global index -1 out of range"):
        m.owners(np.array([-1, 2]))
    with pytest.raises(ValueError, match=r"local index 3 out of range \[0, \d\) on grid rank 1"):
        m.global_from_local(1, [0, 3])
    with pytest.raises(ValueError, match=r"global index 0 is not present on grid rank 1"):
        m.local_from_global(1, [0])
    with pytest.raises(ValueError, match=r"grid rank 2 out of range"):
        m.global_indices(2)
    with pytest.raises(TypeError, match="must be integers"):
        m.owners([0.5])


def test_periodic_is_kept_and_edge_padding_is_boundary():
    m = BlockMap(10, 2, padding=(1, 1), periodic=True)
    assert m.to_dim_dict(0)["periodic"] is True and "periodic" not in BlockMap(10, 2).to_dim_dict(0)
    assert (m.to_dim_dict(0)["start"], m.to_dim_dict(1)["stop"]) == (0, 10)
    assert map_from_dim_dicts([m.to_dim_dict(p) for p in (0, 1)], [6, 6]) == m
    with pytest.raises(ValueError, match="periodic with nonzero edge padding.*unsupported in DAP 0.9.0"):
        m.to_dim_dict(0, "0.9.0")
    # without edge padding, 0.9.0 is fine
    ok = BlockMap(10, 2, padding=[(0, 1), (1, 0)], periodic=True)
    assert map_from_dim_dicts([ok.to_dim_dict(p, "0.9.0") for p in (0, 1)], [6, 6], "0.9.0") == ok


# ---------------------------------------------------------------- properties

@st.composite
def block_maps(draw):
    P = draw(st.integers(1, 5))
    counts = draw(st.lists(st.integers(0, 6), min_size=P, max_size=P))
    bounds = np.concatenate([[0], np.cumsum(counts)]).tolist()
    if P == 1:
        lo = draw(st.integers(0, counts[0]))
        pads = [(lo, draw(st.integers(0, counts[0] - lo)))]
    else:
        # communication widths may not exceed either neighbour's owned count
        comm = [draw(st.integers(0, min(counts[p], counts[p + 1]))) for p in range(P - 1)]
        lefts = [draw(st.integers(0, counts[0]))] + comm
        rights = comm + [draw(st.integers(0, counts[-1]))]
        pads = list(zip(lefts, rights))
    return BlockMap(bounds[-1], P, bounds, pads, draw(st.booleans()))


@st.composite
def cyclic_maps(draw):
    return CyclicMap(draw(st.integers(0, 40)), draw(st.integers(1, 5)), draw(st.integers(1, 6)))


@st.composite
def unstructured_maps(draw):
    size = draw(st.integers(0, 30))
    P = draw(st.integers(1, 4))
    perm = draw(st.permutations(range(size)))
    cuts = sorted(draw(st.lists(st.integers(0, size), min_size=P - 1, max_size=P - 1)))
    parts = [list(a) for a in np.split(np.array(perm, dtype=np.int64), cuts)]
    one_to_one = draw(st.booleans())
    if not one_to_one and size:
        # sprinkle copies onto other ranks (kept locally unique)
        for g in draw(st.lists(st.integers(0, size - 1), max_size=5)):
            p = draw(st.integers(0, P - 1))
            if g not in parts[p]:
                parts[p].insert(draw(st.integers(0, len(parts[p]))), g)
    # some given Python-style negative; the map normalises them
    neg = draw(st.booleans())
    given_parts = [[g - size if neg and i % 2 else g for i, g in enumerate(a)] for a in parts]
    m = UnstructuredMap(size, given_parts, one_to_one)
    assert [a.tolist() for a in m.indices] == parts
    return m


any_map = st.one_of(block_maps(), cyclic_maps(), unstructured_maps())
SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _owned_globals(m, p):
    return m.global_indices(p)[m.owned_local_slice(p)]


@SETTINGS
@given(any_map)
def test_owned_positions_partition_the_dimension(m):
    owned = [_owned_globals(m, p) for p in range(m.grid_size)]
    assert [len(o) for o in owned] == [m.owned_count(p) for p in range(m.grid_size)]
    allg = np.concatenate(owned) if owned else np.zeros(0, np.int64)
    if isinstance(m, UnstructuredMap) and not m.one_to_one:
        assert np.array_equal(np.unique(allg), np.arange(m.size))     # covered
    else:
        assert np.array_equal(np.sort(allg), np.arange(m.size))        # exactly once
        assert sum(m.owned_count(p) for p in range(m.grid_size)) == m.size
    for p in range(m.grid_size):
        gi = m.global_indices(p)
        assert gi.dtype == np.int64 and len(gi) == m.local_size(p)
        assert np.all((gi >= 0) & (gi < m.size))
        assert len(np.unique(gi)) == len(gi)


@SETTINGS
@given(any_map)
def test_owners_inverts_global_indices(m):
    g = np.arange(m.size)
    ranks, local = m.owners(g)
    for p in range(m.grid_size):
        mine = ranks == p
        assert np.array_equal(m.global_indices(p)[local[mine]], g[mine])
        s = m.owned_local_slice(p)
        assert np.all((local[mine] >= s.start) & (local[mine] < s.stop))
        # owned positions map back to themselves (for duplicates, to the lowest holder)
        r, l = m.owners(_owned_globals(m, p))
        if not (isinstance(m, UnstructuredMap) and not m.one_to_one):
            assert np.all(r == p) and np.array_equal(l, np.arange(s.start, s.stop))
        else:
            assert np.all(r <= p)
        for q in np.unique(r):
            assert np.array_equal(m.global_indices(q)[l[r == q]], _owned_globals(m, p)[r == q])


@SETTINGS
@given(any_map)
def test_local_global_translation_round_trips(m):
    for p in range(m.grid_size):
        n = m.local_size(p)
        gi = m.global_indices(p)
        assert np.array_equal(m.global_from_local(p, np.arange(n)), gi)
        assert np.array_equal(m.local_from_global(p, gi), np.arange(n))
        absent = np.setdiff1d(np.arange(m.size), gi)
        if absent.size:
            with pytest.raises(ValueError, match=f"global index {absent[0]} is not present"):
                m.local_from_global(p, absent[:1])


@SETTINGS
@given(any_map)
def test_dim_dicts_round_trip_to_an_equal_map(m):
    dicts = [m.to_dim_dict(p) for p in range(m.grid_size)]
    lengths = [m.local_size(p) for p in range(m.grid_size)]
    back = map_from_dim_dicts(dicts, lengths, "0.10.0")
    assert back == m and type(back) is type(m)
    for p, d in enumerate(dicts):
        assert num_owned_indices(d) == m.owned_count(p)
        if m.dist_type == "b":
            assert d["stop"] - d["start"] == lengths[p]
            assert isinstance(d["padding"], tuple) and len(d["padding"]) == 2
            assert ("periodic" in d) == m.periodic
        if m.dist_type == "c":
            assert ("block_size" in d) == (m.block_size != 1)
        if m.dist_type == "u":
            assert d["indices"].dtype == np.int64 and d["one_to_one"] is m.one_to_one


@SETTINGS
@given(block_maps())
def test_block_0_9_and_0_10_conversion(m):
    P = m.grid_size
    edge = m.padding[0][0] or m.padding[-1][1]
    if m.periodic and edge:
        with pytest.raises(ValueError, match="unsupported in DAP 0.9.0"):
            m.to_dim_dict(0, "0.9.0")
        return
    old = [m.to_dim_dict(p, "0.9.0") for p in range(P)]
    new = [m.to_dim_dict(p, "0.10.0") for p in range(P)]
    lengths = [m.local_size(p) for p in range(P)]
    for p in range(P):
        lo, hi = m.comm_padding(p)
        assert (old[p]["start"], old[p]["stop"]) == m.owned_range(p)
        assert (new[p]["start"], new[p]["stop"]) == (old[p]["start"] - lo, old[p]["stop"] + hi)
        assert old[p]["padding"] == new[p]["padding"]
        assert num_owned_indices(old[p], "0.9.0") == num_owned_indices(new[p]) == m.owned_count(p)
    from_old = map_from_dim_dicts(old, lengths, "0.9.0")
    assert from_old == m == map_from_dim_dicts(new, lengths, "0.10.0")
    assert [from_old.to_dim_dict(p) for p in range(P)] == new


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 200), st.integers(1, 7), st.integers(1, 9))
def test_cyclic_matches_brute_force(size, P, bs):
    m = CyclicMap(size, P, bs)
    g = np.arange(size)
    owner = (g // bs) % P
    for p in range(P):
        assert m.global_indices(p).tolist() == g[owner == p].tolist()
        d = m.to_dim_dict(p)
        assert num_owned_indices(d) == int((owner == p).sum())
    assert np.array_equal(m.owners(g)[0], owner)
    assert np.array_equal(m.owners(g)[1], (g // (bs * P)) * bs + g % bs)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 50), st.integers(1, 7))
def test_default_block_bounds_are_array_split(size, P):
    m = BlockMap(size, P)
    parts = np.array_split(np.arange(size), P)
    for p in range(P):
        assert m.global_indices(p).tolist() == parts[p].tolist()


# ---------------------------------------------------------------- validation rules
# Each test breaks one rule in otherwise valid dicts and checks the message
# names the rule, the grid rank and the offending value.

def block_dicts(version="0.10.0"):
    m = BlockMap(10, 3, bounds=[0, 4, 7, 10], padding=[(1, 1), (1, 2), (2, 0)])
    return [m.to_dim_dict(p, version) for p in range(3)], [m.local_size(p) for p in range(3)]


def cyclic_dicts():
    m = CyclicMap(7, 2, 2)
    return [m.to_dim_dict(p) for p in range(2)], [4, 3]


def unstructured_dicts(one_to_one=True):
    m = UnstructuredMap(5, [[3, 0], [4, 2, 1]], one_to_one)
    return [dict(m.to_dim_dict(p), indices=m.indices[p].copy()) for p in range(2)], [2, 3]


def check(dicts, lengths, exc, match, version="0.10.0"):
    with pytest.raises(exc, match=match):
        map_from_dim_dicts(dicts, lengths, version)


def test_valid_fixtures_are_valid():
    for make in (block_dicts, cyclic_dicts, unstructured_dicts):
        map_from_dim_dicts(*make())
    map_from_dim_dicts(*block_dicts("0.9.0"), "0.9.0")


@pytest.mark.parametrize("make,key", [(block_dicts, "start"), (block_dicts, "stop"),
                                      (cyclic_dicts, "start"), (unstructured_dicts, "indices"),
                                      (block_dicts, "size"), (cyclic_dicts, "proc_grid_size"),
                                      (unstructured_dicts, "proc_grid_rank")])
def test_rule_required_keys(make, key):
    dicts, lengths = make()
    del dicts[1][key]
    check(dicts, lengths, ValueError, rf"required key '{key}' missing in the dict of grid rank 1")


@pytest.mark.parametrize("key,value", [("size", 10.0), ("start", True), ("stop", "7"),
                                       ("proc_grid_rank", np.float64(1))])
def test_rule_int_types(key, value):
    dicts, lengths = block_dicts()
    dicts[1][key] = value
    check(dicts, lengths, TypeError, re.escape(f"{key} of grid rank 1 must be an int, got {value!r}"))


def test_rule_numpy_ints_are_ints():
    dicts, lengths = block_dicts()
    for d in dicts:
        for k in ("size", "start", "stop", "proc_grid_rank", "proc_grid_size"):
            d[k] = np.int32(d[k])
    assert map_from_dim_dicts(dicts, [np.int64(n) for n in lengths]).size == 10


def test_rule_dist_type_present():
    dicts, lengths = cyclic_dicts()
    del dicts[1]["dist_type"]
    check(dicts, lengths, ValueError, r"required key 'dist_type' missing in the dict of grid rank 1")


def test_rule_dist_type_known():
    dicts, lengths = block_dicts()
    for d in dicts:
        d["dist_type"] = "x"
    check(dicts, lengths, ValueError, r"dist_type of grid rank 0 \('x'\) is unknown")


def test_rule_dist_type_equal_on_all_ranks():
    dicts, lengths = block_dicts()
    dicts[2]["dist_type"] = "c"
    check(dicts, lengths, ValueError, r"dist_type of grid rank 2 \('c'\) differs from grid rank 0 \('b'\)")


def test_rule_size_non_negative():
    dicts, lengths = cyclic_dicts()
    for d in dicts:
        d["size"] = -1
    check(dicts, lengths, ValueError, r"size of grid rank 0 \(-1\) must be >= 0")


def test_rule_size_equal_on_all_ranks():
    dicts, lengths = cyclic_dicts()
    dicts[1]["size"] = 8
    check(dicts, lengths, ValueError, r"size of grid rank 1 \(8\) differs from grid rank 0 \(7\)")


def test_rule_proc_grid_size_positive():
    dicts, lengths = cyclic_dicts()
    dicts[0]["proc_grid_size"] = 0
    check(dicts, lengths, ValueError, r"proc_grid_size of grid rank 0 \(0\) must be >= 1")


def test_rule_proc_grid_size_equal_on_all_ranks():
    dicts, lengths = unstructured_dicts()
    dicts[1]["proc_grid_size"] = 3
    check(dicts, lengths, ValueError, r"proc_grid_size of grid rank 1 \(3\) differs from grid rank 0 \(2\)")


def test_rule_proc_grid_size_matches_number_of_dicts():
    dicts, lengths = block_dicts()
    check(dicts[:2], lengths[:2], ValueError,
          r"proc_grid_size \(3\) must equal the number of dicts given \(2\)")


def test_rule_proc_grid_rank_is_position():
    dicts, lengths = block_dicts()
    dicts[1]["proc_grid_rank"], dicts[2]["proc_grid_rank"] = 2, 1
    check(dicts, lengths, ValueError, r"proc_grid_rank of the dict at grid rank 1 is 2")


def test_rule_buffer_lengths_one_per_dict():
    dicts, lengths = block_dicts()
    check(dicts, lengths[:2], ValueError, "3 dimension dictionaries but 2 buffer lengths")
    check(dicts, [5, -1, 3], ValueError, r"buffer length of grid rank 1 must be >= 0, got -1")
    check([], [], ValueError, "got none")


def test_rule_dicts_are_mappings():
    check([[("dist_type", "b")]], [1], TypeError, "dimension dictionary of grid rank 0 must be a dict")


def test_rule_version_supported():
    check(*block_dicts(), ValueError, r"unsupported DAP version '1.0.0'", version="1.0.0")


# -- block

def test_rule_block_start_stop_within_size():
    dicts, lengths = block_dicts()
    dicts[2]["stop"] = 11
    check(dicts, lengths, ValueError, r"grid rank 2 needs 0 <= start <= stop <= size, got start 5, stop 11, size 10")
    dicts, lengths = block_dicts()
    dicts[1]["start"], dicts[1]["stop"] = 8, 3
    check(dicts, lengths, ValueError, r"grid rank 1 needs 0 <= start <= stop <= size, got start 8, stop 3")


def test_rule_block_stop_minus_start_is_buffer_length():
    dicts, lengths = block_dicts()
    lengths[1] += 1
    check(dicts, lengths, ValueError, r"stop - start of grid rank 1 \(9 - 3 = 6\) must equal its buffer length \(7\)")


def test_rule_block_adjacent_blocks():
    dicts = [{"dist_type": "b", "size": 9, "proc_grid_size": 2, "proc_grid_rank": 0, "start": 0, "stop": 5},
             {"dist_type": "b", "size": 9, "proc_grid_size": 2, "proc_grid_rank": 1, "start": 6, "stop": 9}]
    check(dicts, [5, 3], ValueError,
          r"block dimension: stop of grid rank 0 \(5\) must equal start of grid rank 1 \(6\) \(adjacent blocks\)")
    dicts[1]["start"] = 4                                     # overlap
    check(dicts, [5, 5], ValueError, r"stop of grid rank 0 \(5\) must equal start of grid rank 1 \(4\)")
    dicts, lengths = block_dicts()                            # with padding: owned ranges
    dicts[1]["start"] += 1
    check(dicts, [5, 5, 5], ValueError,
          r"owned stop of grid rank 0 \(4\) must equal owned start of grid rank 1 \(5\) \(adjacent blocks")


def test_rule_block_cover_from_zero_to_size():
    dicts = [{"dist_type": "b", "size": 9, "proc_grid_size": 2, "proc_grid_rank": 0, "start": 1, "stop": 5},
             {"dist_type": "b", "size": 9, "proc_grid_size": 2, "proc_grid_rank": 1, "start": 5, "stop": 9}]
    check(dicts, [4, 4], ValueError, r"owned start of grid rank 0 \(1\) must be 0")
    dicts[0]["start"], dicts[1]["stop"] = 0, 8
    check(dicts, [5, 3], ValueError, r"owned stop of grid rank 1 \(8\) must equal size \(9\)")


def test_rule_block_padding_is_two_non_negative_ints():
    for bad in [(1,), (1, 2, 3), (1.0, 2), "ab", 3]:
        dicts, lengths = block_dicts()
        dicts[1]["padding"] = bad
        check(dicts, lengths, TypeError, re.escape(f"padding of grid rank 1 must be a 2-tuple of ints, got {bad!r}"))
    dicts, lengths = block_dicts()
    dicts[0]["padding"] = (-1, 1)
    check(dicts, lengths, ValueError, r"padding of grid rank 0 must be non-negative, got \(-1, 1\)")


def test_rule_block_communication_padding_pairs_match():
    dicts, lengths = block_dicts()
    dicts[1]["padding"] = (1, 1)                # rank 2 still says left 2
    dicts[1]["stop"] -= 1
    lengths[1] -= 1
    check(dicts, lengths, ValueError,
          r"right communication padding of grid rank 1 \(1\) must equal left communication padding of grid rank 2 \(2\)")


def test_rule_block_communication_padding_within_neighbour():
    m = BlockMap(6, 3, bounds=[0, 3, 4, 6])
    dicts = [m.to_dim_dict(p) for p in range(3)]
    # rank 0 wants 2 ghost cells of rank 1, which owns only [3, 4)
    dicts[0].update(padding=(0, 2), stop=5)
    dicts[1].update(padding=(2, 0), start=1)
    check(dicts, [5, 3, 2], ValueError,
          r"right communication padding of grid rank 0 \(2\) exceeds the owned count of its neighbour grid rank 1 \(1\)")
    with pytest.raises(ValueError, match=r"left communication padding of grid rank 2 \(2\) exceeds the owned count of its neighbour grid rank 1 \(1\)"):
        BlockMap(6, 3, bounds=[0, 3, 4, 6], padding=[(0, 0), (0, 2), (2, 0)])


def test_rule_block_communication_padding_within_own_buffer():
    dicts = [{"dist_type": "b", "size": 4, "proc_grid_size": 2, "proc_grid_rank": 0, "start": 0, "stop": 1, "padding": (0, 2)},
             {"dist_type": "b", "size": 4, "proc_grid_size": 2, "proc_grid_rank": 1, "start": 0, "stop": 4, "padding": (2, 0)}]
    check(dicts, [1, 4], ValueError, r"communication padding \(0, 2\) of grid rank 0 exceeds its buffer range \[0, 1\)")


def test_rule_block_boundary_padding_within_owned():
    with pytest.raises(ValueError, match=r"left boundary padding of grid rank 0 \(4\) exceeds its owned count \(3\)"):
        BlockMap(6, 2, padding=[(4, 0), (0, 0)])
    with pytest.raises(ValueError, match=r"right boundary padding of grid rank 1 \(4\) exceeds its owned count \(3\)"):
        BlockMap(6, 2, padding=[(0, 0), (0, 4)])
    dicts = [{"dist_type": "b", "size": 3, "proc_grid_size": 1, "proc_grid_rank": 0, "start": 0, "stop": 3, "padding": (2, 2)}]
    check(dicts, [3], ValueError, r"boundary padding \(2, 2\) of grid rank 0 exceeds its owned count \(3\)")


def test_rule_block_periodic_is_bool_and_equal():
    dicts, lengths = block_dicts()
    dicts[1]["periodic"] = 1
    check(dicts, lengths, TypeError, r"periodic of grid rank 1 must be a bool, got 1")
    dicts, lengths = block_dicts()
    dicts[2]["periodic"] = True
    check(dicts, lengths, ValueError, r"periodic of grid rank 2 \(True\) differs from grid rank 0 \(False\)")


def test_rule_block_0_9_buffer_length_and_range():
    dicts, lengths = block_dicts("0.9.0")
    lengths[1] -= 1
    check(dicts, lengths, ValueError,
          r"stop - start plus communication padding of grid rank 1 \(6\) must equal its buffer length \(5\)",
          version="0.9.0")
    dicts = [{"dist_type": "b", "size": 4, "proc_grid_size": 2, "proc_grid_rank": 0, "start": 0, "stop": 4, "padding": (0, 1)},
             {"dist_type": "b", "size": 4, "proc_grid_size": 2, "proc_grid_rank": 1, "start": 4, "stop": 4, "padding": (1, 0)}]
    check(dicts, [5, 1], ValueError, r"buffer range of grid rank 0 \[0, 5\).*leaves \[0, 4\)", version="0.9.0")


def test_rule_block_0_9_periodic_edge_padding_unsupported():
    dicts, lengths = block_dicts("0.9.0")
    for d in dicts:
        d["periodic"] = True
    check(dicts, lengths, ValueError,
          r"periodic with nonzero edge padding \(1, 1\) on grid rank 0 is unsupported in DAP 0.9.0",
          version="0.9.0")


def test_rule_n_only_in_0_9_and_alone():
    check([{"dist_type": "n", "size": 3}], [3], ValueError, r"dist_type of grid rank 0 \('n'\) is only valid in DAP 0.9.0")
    check([{"dist_type": "n", "size": 3}] * 2, [3, 3], ValueError, "grid size is 1, but 2 dicts", version="0.9.0")
    check([{"dist_type": "n"}], [3], ValueError, "required key 'size' missing", version="0.9.0")
    check([{"dist_type": "n", "size": 4}], [3], ValueError,
          r"stop - start plus communication padding of grid rank 0 \(4\) must equal its buffer length \(3\)",
          version="0.9.0")


def test_rule_block_constructor_bounds():
    with pytest.raises(ValueError, match=r"bounds must have grid_size \+ 1 = 3 entries, got 2"):
        BlockMap(5, 2, bounds=[0, 5])
    with pytest.raises(ValueError, match=r"bounds must run from 0 to size \(5\), got 0 .. 4"):
        BlockMap(5, 2, bounds=[0, 2, 4])
    with pytest.raises(ValueError, match=r"non-decreasing: owned range of grid rank 1 is \[6, 5\)"):
        BlockMap(5, 2, bounds=[0, 6, 5])
    with pytest.raises(ValueError, match=r"padding must be one \(lo, hi\) or one per grid rank \(3\), got 2"):
        BlockMap(5, 3, padding=[(0, 0), (0, 0)])
    with pytest.raises(TypeError, match="size must be an int, got True"):
        BlockMap(True, 1)
    with pytest.raises(ValueError, match=r"grid_size must be >= 1, got 0"):
        CyclicMap(5, 0)


# -- cyclic

def test_rule_cyclic_block_size():
    dicts, lengths = cyclic_dicts()
    for d in dicts:
        d["block_size"] = 0
    check(dicts, lengths, ValueError, r"block_size of grid rank 0 \(0\) must be >= 1")
    dicts, lengths = cyclic_dicts()
    dicts[1]["block_size"] = 3
    check(dicts, lengths, ValueError, r"block_size of grid rank 1 \(3\) differs from grid rank 0 \(2\)")
    dicts, lengths = cyclic_dicts()
    dicts[1]["block_size"] = 2.0
    check(dicts, lengths, TypeError, r"block_size of grid rank 1 must be an int, got 2.0")


def test_rule_cyclic_start():
    dicts, lengths = cyclic_dicts()
    dicts[1]["start"] = 1
    check(dicts, lengths, ValueError, r"start of grid rank 1 \(1\) must be grid rank \* block_size \(2\)")


def test_rule_cyclic_buffer_length_is_owned_count():
    dicts, lengths = cyclic_dicts()
    check(dicts, [3, 4], ValueError, r"buffer length of grid rank 0 \(3\) must equal its owned count \(4\)")


# -- unstructured

def test_rule_unstructured_indices_integer_1d_buffer():
    dicts, lengths = unstructured_dicts()
    dicts[1]["indices"] = np.array([[4, 2, 1]])
    check(dicts, lengths, ValueError, r"indices of grid rank 1 must be 1-d, got shape \(1, 3\)")
    dicts[1]["indices"] = np.array([4.0, 2.0, 1.0])
    check(dicts, lengths, TypeError, r"indices of grid rank 1 must be integers, got dtype float64")
    dicts[1]["indices"] = memoryview(np.array([4, 2, 1], dtype=np.int32))   # buffers are fine
    assert map_from_dim_dicts(dicts, lengths).indices[1].tolist() == [4, 2, 1]


def test_rule_unstructured_indices_in_range_and_negatives_normalised():
    dicts, lengths = unstructured_dicts()
    dicts[1]["indices"] = [4, 5, 1]
    check(dicts, lengths, ValueError, r"index 5 out of range \[0, 5\).* on grid rank 1")
    dicts[1]["indices"] = [4, -6, 1]
    check(dicts, lengths, ValueError, r"index -1 out of range \[0, 5\).* on grid rank 1")
    dicts[1]["indices"] = [-1, -3, 1]
    assert map_from_dim_dicts(dicts, lengths).indices[1].tolist() == [4, 2, 1]


def test_rule_unstructured_locally_unique():
    dicts, lengths = unstructured_dicts(False)
    dicts[1]["indices"] = [4, 2, 4, 1]
    check(dicts, [2, 4], ValueError, r"indices of grid rank 1 must be locally unique, but global index 4 repeats")
    dicts[1]["indices"] = [4, 2, -1, 1]                        # -1 is 4 too
    check(dicts, [2, 4], ValueError, "global index 4 repeats")


def test_rule_unstructured_length_is_buffer_length():
    dicts, lengths = unstructured_dicts()
    check(dicts, [2, 4], ValueError, r"len\(indices\) of grid rank 1 \(3\) must equal its buffer length \(4\)")


def test_rule_unstructured_one_to_one_bool_and_equal():
    dicts, lengths = unstructured_dicts()
    dicts[1]["one_to_one"] = False
    check(dicts, lengths, ValueError, r"one_to_one of grid rank 1 \(False\) differs from grid rank 0 \(True\)")
    dicts[1]["one_to_one"] = "yes"
    check(dicts, lengths, TypeError, r"one_to_one of grid rank 1 must be a bool, got 'yes'")


def test_rule_unstructured_coverage():
    for one_to_one in (True, False):
        dicts, lengths = unstructured_dicts(one_to_one)
        dicts[1]["indices"] = [4, 3, 1]                        # nobody holds 2
        check(dicts, lengths, ValueError, r"coverage: global index 2 is not held by any grid rank")


def test_rule_unstructured_one_to_one_exactly_once():
    dicts, lengths = unstructured_dicts(True)
    dicts[1]["indices"] = [4, 2, 1, 0]
    check(dicts, [2, 4], ValueError,
          r"one_to_one is True but the owned counts sum to 6, not size 5: global index 0 is held by grid ranks 0 and 1")
    dicts[0]["one_to_one"] = dicts[1]["one_to_one"] = False     # allowed without one_to_one
    assert map_from_dim_dicts(dicts, [2, 4]).owners([0])[0].tolist() == [0]


# -- maps as types: one interface, every kind answers for itself ----------------------

def test_each_kind_names_and_describes_itself():
    cases = [(BlockMap(8, 2), "b", "block"), (BlockMap(8, 1), "n", "n"),
             (BlockMap(8, 2, padding=(1, 1)), "b+pad", "block padded"),
             (CyclicMap(8, 2), "c", "cyclic"), (CyclicMap(8, 2, block_size=3), "c[3]",
                                                "block-cyclic(3)"),
             (UnstructuredMap(4, [[0, 1], [2, 3]]), "u", "unstructured")]
    for m, spec, words in cases:
        assert (m.spec, m.describe()) == (spec, words), m
        assert Map.kind_of(m.dist_type) is type(m)
        assert Map.kind_of(m.to_json()) is type(m)
    assert Map.kind_of("n") is BlockMap
    with pytest.raises(ValueError, match="unknown dist type 'x'"):
        Map.kind_of("x")
    assert [m.padded for m, _, _ in cases] == [False, False, True, False, False, False]
    assert [m.ranges for m, _, _ in cases] == [True, True, True, False, False, False]
    assert [type(m).stored_indices for m, _, _ in cases] == [False] * 5 + [True]
    assert [m.ghosts_by_index for m, _, _ in cases] == [False] * 5 + [True]


def test_from_spec_builds_each_kind_from_its_dist_options():
    assert BlockMap.from_spec(10, 2, sizes=[3, 7]) == BlockMap(10, 2, bounds=(0, 3, 10))
    assert BlockMap.from_spec(10, 2, padding=(1, 1), periodic=True) == \
        BlockMap(10, 2, padding=(1, 1), periodic=True)
    # per-rank padding, as DAP allows: one (lo, hi) per grid rank
    assert BlockMap.from_spec(10, 2, padding=[(0, 2), (2, 1)]).padding == ((0, 2), (2, 1))
    assert CyclicMap.from_spec(10, 2, block_size=4) == CyclicMap(10, 2, block_size=4)
    m = UnstructuredMap.from_spec(4, 2, indices=[[3, 1], [0, 2]])
    assert m.one_to_one and m.global_indices(0).tolist() == [3, 1]
    with pytest.raises(ValueError, match=r"give indices\[0\]"):
        UnstructuredMap.from_spec(4, 2, where="[0]")
    with pytest.raises(TypeError, match=r"padding\[1\] must hold ints"):
        BlockMap.from_spec(10, 2, padding=(1.0, 1), where="[1]")
    with pytest.raises(ValueError, match="one .lo, hi. per grid rank .2., got 3"):
        BlockMap.from_spec(10, 2, padding=[(1, 1)] * 3)


def test_the_distributed_unstructured_map_answers_the_same_interface():
    from xdap.maps import DistributedUnstructuredMap, NotLocal
    whole = UnstructuredMap(5, [[3, 0], [4, 2, 1]], one_to_one=True)
    part = DistributedUnstructuredMap(5, [2, 3], {1: [4, 2, 1]}, True, whole.fingerprint())
    assert isinstance(part, UnstructuredMap) and not part.complete and whole.complete
    assert part == whole and hash(part) == hash(whole)
    assert part.to_json() == whole.to_json()
    assert part.to_dim_dict(1)["indices"].tolist() == [4, 2, 1]
    assert part.local_from_global(1, [1, 4]).tolist() == [2, 0]
    assert (part.spec, part.describe(), part.known) == ("u", "unstructured", (1,))
    assert "distributed" in repr(part) and "distributed" not in repr(whole)
    for call in (lambda: part.global_indices(0), lambda: part.owners([1]),
                 lambda: part.json_arrays()):
        with pytest.raises(NotLocal):
            call()
