"""Small functions with Python control flow and graph-break patterns for tests/test_dy2static.py.

Each case is ``(function, inputs, breaks)``: ``inputs`` builds the arguments from a numpy
generator (tensors as numpy arrays, made tensors on the test's device), ``breaks`` is how many
lines of the function break its graph under ``to_static``. Kept in their own module so the
conversion reads their source from a file, as it does for a user's code.
"""

from __future__ import annotations

import math

import numpy as np

import framework as fw


def f32(*shape: int):
    return lambda rng: rng.standard_normal(shape).astype(np.float32)


def pos(*shape: int):
    return lambda rng: (np.abs(rng.standard_normal(shape)) + 0.5).astype(np.float32)


def i64(v: int):
    return lambda rng: np.array(v, np.int64)


# -- converted if -----------------------------------------------------------------------------
def if_else(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = x - 1
    return y


def if_elif_else(x):
    s = x.mean()
    if s > 0.5:
        y = x * 3
    elif s > -0.5:
        y = x + 10
    else:
        y = -x
    return y


def if_without_else(x):
    y = x + 1
    if x.max() > 0:
        y = y * 3
    return y


def early_return(x):
    if x.mean() > 0:
        return x * 2
    return x * 3


def nested_early_return(x):
    if x.sum() > 0:
        if x.max() > 1.5:
            return x + 100
        y = x * 2
    else:
        y = x - 5
    return y + 1


def and_or_not(x):
    if (x.sum() > 0 and x.max() < 3) or not (x.min() > -10):
        return x * 2
    return x / 2


def if_expression(x):
    y = x * 2 if x.sum() > 0 else x / 2
    return y + 1


def numbers_become_tensors(x):
    if x.sum() > 0:
        k = 2
    else:
        k = 5
    return x * k


def tuple_returns(x):
    if x.sum() > 0:
        return x + 1, x * 2
    return x - 1, x / 2


def dict_output(x):
    out = {"plain": x * 2}
    if x.mean() > 0:
        out["signed"] = x
    else:
        out["signed"] = -x
    return out


def python_value_branch(x, flag):
    if flag:
        return x * 2
    return x - 2


def shape_branch(x):
    if x.shape[0] > 2:
        return x.sum(axis=0)
    return x.mean(axis=0)


def int_tensor_truth(x, n):
    if n:
        return x + 1
    return x - 1


def python_if_expression(x, flag):
    return x * (3 if flag else 4)


# -- converted loops ----------------------------------------------------------------------------
def while_tensor_cond(x):
    s = x
    while s.sum() < 50:
        s = s * 2
    return s


def while_python_counter_tensor_bound(x, n):
    i = 0
    acc = x * 0
    while i < n:
        acc = acc + x
        i += 1
    return acc


def for_range_tensor(x, n):
    acc = x * 0
    for i in range(n):
        acc = acc + i
    return acc


def for_range_python_with_tensor_if(x):
    for i in range(4):
        if x.sum() > i:
            x = x - 1
        else:
            x = x + 0.5
    return x


def for_break(x, n):
    acc = x * 0
    for _i in range(n):
        if acc.sum() > 6:
            break
        acc = acc + x
    return acc


def while_break(x):
    s = x
    k = 0
    while k < 100:
        s = s + 1
        if s.sum() > 20:
            break
        k += 1
    return s, k


def for_continue(x, n):
    acc = x * 0
    for i in range(n):
        if i % 2 == 0:
            continue
        acc = acc + i
    return acc


def nested_loops(x, n):
    acc = x * 0
    for i in range(n):
        for j in range(2):
            acc = acc + i * j
    return acc


def widened_number(x, n):
    s = 0
    for _i in range(n):
        s = s + x.sum()
    return x * 0 + s


def while_and_condition(x):
    i = 0
    s = x
    while i < 10 and s.sum() < 30:
        s = s + x
        i += 1
    return s


def range_start_stop_step(x, n):
    acc = x * 0
    for i in range(1, n, 2):
        acc = acc + i
    return acc


def list_append_python_loop(x):
    outs = []
    for i in range(3):
        outs.append(x * i)
    return fw.stack(outs)


# -- nested functions and closures -----------------------------------------------------------
def nested_function(x):
    def inner(y):
        if y.sum() > 0:
            return y
        return -y

    return inner(x) + 1


def make_closure(scale):
    def closure(x):
        if x.sum() > 0:
            return x * scale
        return x - scale

    return closure


closure_fn = make_closure(3.0)


def helper_branch(y):
    if y.sum() > 0:  # a called function is not converted: a graph break under full_graph=False
        return y
    return -y


def calls_unconverted_helper(x):
    return helper_branch(x) * 2


# -- graph breaks --------------------------------------------------------------------------------
def print_break(x):
    y = x * 2
    print("y is", y)
    return y + 1


def item_in_the_middle(x):
    y = x * 2
    v = y.sum().item()
    return y + v


def numpy_in_the_middle(x):
    a = x.numpy()
    return x + float(a.sum())


def two_breaks(x):
    y = x + 1
    print(y)
    z = y * y.max().item()
    return z


def numpy_library_call(x):
    a = np.sin(x)
    return x + fw.to_tensor(a, device=x.device)


def math_library_call(x):
    m = math.sqrt(float(x.abs().sum()))
    return x * m


def data_dependent_shape(x):
    idx = fw.nonzero(x > 0)
    return x.sum() + idx.shape[0]


def item_in_a_condition(x):
    if x.sum().item() > 0:
        return x * 2
    return x * 3


def return_inside_a_loop(x):
    for i in range(3):
        if x.sum() > i:
            return x + i
    return x


def break_in_a_loop_body_then_print(x, n):
    acc = x * 0
    for _i in range(n):
        acc = acc + 1
    print(acc)
    return acc


def list_of_tensors_and_item(x):
    parts = [x * i for i in range(3)]
    total = sum(p.sum().item() for p in parts)
    return fw.stack(parts) + total


def shapes_in_strings_are_fine(x):
    label = f"{x.shape}-{x.dtype}"
    return x * len(label)


CASES = {
    f.__name__: (f, ins, breaks)
    for f, ins, breaks in [
        (if_else, [f32(4)], 0),
        (if_elif_else, [f32(5)], 0),
        (if_without_else, [f32(3)], 0),
        (early_return, [f32(4)], 0),
        (nested_early_return, [f32(6)], 0),
        (and_or_not, [f32(4)], 0),
        (if_expression, [f32(3)], 0),
        (numbers_become_tensors, [f32(3)], 0),
        (tuple_returns, [f32(3)], 0),
        (dict_output, [f32(4)], 0),
        (python_value_branch, [f32(3), lambda rng: True], 0),
        (shape_branch, [f32(3, 2)], 0),
        (int_tensor_truth, [f32(3), i64(2)], 0),
        (python_if_expression, [f32(2), lambda rng: False], 0),
        (while_tensor_cond, [pos(3)], 0),
        (while_python_counter_tensor_bound, [f32(3), i64(4)], 0),
        (for_range_tensor, [f32(2), i64(5)], 0),
        (for_range_python_with_tensor_if, [f32(3)], 0),
        (for_break, [pos(2), i64(10)], 0),
        (while_break, [pos(3)], 0),
        (for_continue, [f32(2), i64(7)], 0),
        (nested_loops, [f32(2), i64(3)], 0),
        (widened_number, [f32(3), i64(3)], 0),
        (while_and_condition, [pos(2)], 0),
        (range_start_stop_step, [f32(2), i64(8)], 0),
        (list_append_python_loop, [f32(3)], 0),
        (nested_function, [f32(3)], 0),
        (closure_fn, [f32(3)], 0),
        (calls_unconverted_helper, [f32(3)], 1),
        (print_break, [f32(3)], 1),
        (item_in_the_middle, [f32(3)], 1),
        (numpy_in_the_middle, [f32(3)], 1),
        (two_breaks, [f32(3)], 2),
        (numpy_library_call, [f32(3)], 1),
        (math_library_call, [f32(3)], 1),
        (data_dependent_shape, [f32(5)], 1),
        (item_in_a_condition, [f32(3)], 1),
        (return_inside_a_loop, [f32(3)], 1),
        (break_in_a_loop_body_then_print, [f32(2), i64(3)], 1),
        (list_of_tensors_and_item, [f32(3)], 1),
        (shapes_in_strings_are_fine, [f32(3)], 0),
    ]
}
