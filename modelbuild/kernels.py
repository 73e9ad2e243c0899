"""The int8 graph rewritten into ONNX Runtime's fused kernels: fewer passes, the same model.

The exported all-MiniLM-L6-v2 graph spells each layer out in small operators (a reshape,
a transpose, a scale, a mask, a softmax, a guard against NaN for each attention; a cast,
a multiplication and a bias after each int8 product; GELU in five steps), and ONNX
Runtime's own fusions do not match them once the products are int8. Each of these
operators is a pass over the activations, and for the short texts the channel embeds (a
prompt's segments: 5 to 60 tokens) the passes cost as much as the products. :func:`fuse`
rewrites, in place:

- a softmax's NaN guard (``Where(IsNaN(p), 0, p)``) is dropped: the export's mask adds
  the float32 minimum, never -inf, so no row of ``p`` is ever NaN;
- an int8 product followed by ``Cast`` and ``Mul`` by its two scales' product becomes one
  ``MatMulIntegerToFloat`` (the same integer sums, times the same scales), and the bias
  ``Add`` after it becomes that kernel's bias;
- each attention (from the three projections to the output's reshape) becomes one
  ``MultiHeadAttention`` with the same scale and the attention mask as a key padding mask;
- ``x * 0.5 * (1 + erf(x / sqrt(2)))`` becomes one ``Gelu``;
- the multiplication that zeroes the feed-forward output's float channels before they
  are quantised is dropped: with the activation range fixed, those channels only clip,
  and their rows in the int8 weights are zero, so they add nothing either way.

The kernels compute the same functions but round otherwise (the bias inside the product's
scaling, GELU's erf by another approximation), and the int8 activations turn a rounding
difference into one level of a value here and there: the vectors move by cosine 0.9985 at
worst over the 1,074 dev texts, and stay exactly as close to the shipped form's as before
(mean cosine 0.99893, either graph). A 600-byte prompt's segments embed a quarter faster
(22.4 against 30.9 ms on one thread, with ``quantize.SKIPPED_FUSIONS``). :func:`fuse`
returns what it rewrote; a pattern it does not find is left as it is (the graph is then
only slower), and ``quantize.fused`` compares the two graphs' outputs before it keeps the
fused one.
"""

from __future__ import annotations

from typing import Any

# Operators an attention's query, key and value pass through between their projection
# and the scores' product: reshapes into heads, transposes, and a scalar scale.
_LAYOUT_OPERATORS = frozenset({"Reshape", "Transpose", "Mul"})
INT32 = 6  # onnx.TensorProto.INT32
KEY_PADDING_MASK = "attention_mask_int32"


def fuse(model: Any, *, heads: int) -> dict[str, int]:
    """Rewrite ``model`` (an ONNX ``ModelProto``) in place; how many of each rewrite."""
    done = {
        "nan_guards": _drop_nan_guards(model.graph),
        "int8_products": _fuse_products(model.graph),
        "biases": _fold_biases(model.graph),
        "attentions": _fuse_attention(model.graph, heads),
        "gelus": _fuse_gelu(model.graph),
        "float_channel_masks": _drop_float_channel_masks(model.graph),
    }
    _drop_dead_nodes(model.graph)
    return done


def _producers(graph: Any) -> dict[str, Any]:
    return {output: node for node in graph.node for output in node.output}


def _consumers(graph: Any) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            found.setdefault(name, []).append(node)
    return found


def _constants(graph: Any) -> dict[str, Any]:
    from onnx import numpy_helper

    return {item.name: numpy_helper.to_array(item) for item in graph.initializer}


def _rewire(graph: Any, old: str, new: str) -> None:
    """Every node reading ``old`` reads ``new`` instead."""
    for node in graph.node:
        for position, name in enumerate(node.input):
            if name == old:
                node.input[position] = new


def _replace(graph: Any, first: Any, new: Any, removed: list[Any]) -> None:
    """``new`` where ``first`` stood (so the order stays topological), ``removed`` gone."""
    graph.node.insert(list(graph.node).index(first), new)
    for node in removed:
        graph.node.remove(node)


def _drop_nan_guards(graph: Any) -> int:
    producers, count = _producers(graph), 0
    for node in list(graph.node):
        test = producers.get(node.input[0]) if node.op_type == "Where" else None
        if test is None or test.op_type != "IsNaN" or test.input[0] != node.input[2]:
            continue
        _rewire(graph, node.output[0], node.input[2])
        graph.node.remove(node)
        graph.node.remove(test)
        count += 1
    return count


def _fuse_products(graph: Any) -> int:
    from onnx import helper

    producers, consumers = _producers(graph), _consumers(graph)
    constants = {item.name for item in graph.initializer}
    count = 0
    for product in [node for node in graph.node if node.op_type == "MatMulInteger"]:
        chain = _chain(consumers, product.output[0], ("Cast", "Mul"))
        quantiser = producers.get(product.input[0])
        if chain is None or quantiser is None or quantiser.op_type != "QuantizeLinear":
            continue
        cast, scaling = chain
        scales = next(name for name in scaling.input if name != cast.output[0])
        both = producers.get(scales)
        activation_scale = quantiser.input[1]
        if (
            both is None
            or both.op_type != "Mul"
            or activation_scale not in both.input
            or not all(name in constants for name in both.input)
        ):
            continue
        weight_scale = next(name for name in both.input if name != activation_scale)
        fused = helper.make_node(
            "MatMulIntegerToFloat",
            [
                product.input[0],
                product.input[1],
                activation_scale,
                weight_scale,
                product.input[2],
                product.input[3],
            ],
            [scaling.output[0]],
            f"{product.name}_to_float",
            domain="com.microsoft",
        )
        _replace(graph, product, fused, [product, cast, scaling])
        count += 1
    return count


def _fold_biases(graph: Any) -> int:
    """An ``Add`` of a constant vector after a ``MatMulIntegerToFloat`` (its only reader)
    becomes the product's bias input."""
    consumers, constants = _consumers(graph), _constants(graph)
    count = 0
    for product in [node for node in graph.node if node.op_type == "MatMulIntegerToFloat"]:
        bias = _only_user(consumers, product.output[0], "Add")
        if bias is None or len(product.input) > 6:
            continue
        vector = next((name for name in bias.input if name != product.output[0]), None)
        if vector not in constants or constants[vector].ndim != 1:
            continue
        product.input.append(vector)  # the 7th input: A, B, their scales and zero points, bias
        product.output[0] = bias.output[0]
        graph.node.remove(bias)
        count += 1
    return count


def _fuse_gelu(graph: Any) -> int:
    """``Mul(x, Mul(0.5, Add(Erf(Div(x, sqrt(2))), 1)))``, the export's exact GELU, in
    either operand order of each ``Mul`` and ``Add``."""
    from onnx import helper

    consumers, constants = _consumers(graph), _constants(graph)

    def other_is(node: Any, known: str, value: float) -> bool:
        other = [name for name in node.input if name != known]
        return (
            len(other) == 1
            and other[0] in constants
            and constants[other[0]].size == 1
            and abs(float(constants[other[0]]) - value) < 1e-6
        )

    count = 0
    for divide in [node for node in graph.node if node.op_type == "Div"]:
        chain = _chain(consumers, divide.output[0], ("Erf", "Add", "Mul", "Mul"))
        if chain is None:
            continue
        erf, plus, half, times = chain
        value = divide.input[0]
        if (
            not other_is(divide, value, 2**0.5)
            or not other_is(plus, erf.output[0], 1.0)
            or not other_is(half, plus.output[0], 0.5)
            or sorted(times.input) != sorted([value, half.output[0]])
        ):
            continue
        gelu = helper.make_node(
            "Gelu", [value], [times.output[0]], f"{divide.name}_gelu", domain="com.microsoft"
        )
        _replace(graph, divide, gelu, [divide, erf, plus, half, times])
        count += 1
    return count


def _only_user(consumers: dict[str, list[Any]], name: str, kind: str) -> Any | None:
    users = consumers.get(name, [])
    return users[0] if len(users) == 1 and users[0].op_type == kind else None


def _chain(consumers: dict[str, list[Any]], name: str, kinds: tuple[str, ...]) -> list[Any] | None:
    """The nodes of ``kinds`` that read ``name`` one after the other, each the only reader
    of the one before; None where the graph does not go so."""
    nodes = []
    for kind in kinds:
        node = _only_user(consumers, name, kind)
        if node is None:
            return None
        nodes.append(node)
        name = node.output[0]
    return nodes


def _source(producers: dict[str, Any], constants: dict[str, Any], name: str) -> tuple[str, float]:
    """Walk back from ``name`` through reshapes, transposes and scalar scales to the
    projection it came from: (that tensor, the product of the scales)."""
    scale = 1.0
    while name in producers and producers[name].op_type in _LAYOUT_OPERATORS:
        node = producers[name]
        if node.op_type == "Mul":
            scalars = [item for item in node.input if item in constants]
            if len(scalars) != 1 or constants[scalars[0]].size != 1:
                break
            scale *= float(constants[scalars[0]])
            name = next(item for item in node.input if item not in constants)
        else:
            name = node.input[0]
    return name, scale


def _fuse_attention(graph: Any, heads: int) -> int:
    from onnx import helper

    producers, consumers, constants = _producers(graph), _consumers(graph), _constants(graph)
    found: list[tuple[Any, Any, list[Any]]] = []
    for softmax in [node for node in graph.node if node.op_type == "Softmax"]:
        masked = producers.get(softmax.input[0])
        scores = producers.get(masked.input[0]) if masked and masked.op_type == "Add" else None
        chain = _chain(consumers, softmax.output[0], ("MatMul", "Transpose", "Reshape"))
        if scores is None or scores.op_type != "MatMul" or chain is None:
            continue
        weighted, heads_first, joined = chain
        query, query_scale = _source(producers, constants, scores.input[0])
        key, key_scale = _source(producers, constants, scores.input[1])
        value, value_scale = _source(producers, constants, weighted.input[1])
        if value_scale != 1.0:
            continue
        found.append(
            (
                softmax,
                helper.make_node(
                    "MultiHeadAttention",
                    [query, key, value, "", KEY_PADDING_MASK],
                    [joined.output[0]],
                    f"{softmax.name}_attention",
                    domain="com.microsoft",
                    num_heads=heads,
                    scale=query_scale * key_scale,
                    # What the export's mask adds: the float32 minimum.
                    mask_filter_value=-3.4028234663852886e38,
                ),
                [softmax, weighted, heads_first, joined],
            )
        )
    if found:
        graph.node.insert(
            0,
            helper.make_node(
                "Cast", ["attention_mask"], [KEY_PADDING_MASK], KEY_PADDING_MASK, to=INT32
            ),
        )
    for softmax, fused, removed in found:
        _replace(graph, softmax, fused, removed)
    return len(found)


def _drop_float_channel_masks(graph: Any) -> int:
    """The ``split_*_mask`` multiplications of ``quantize.prepare``."""
    count = 0
    for node in list(graph.node):
        if node.op_type == "Mul" and node.name.startswith("split_") and node.name.endswith("_mask"):
            _rewire(graph, node.output[0], node.input[0])
            graph.node.remove(node)
            count += 1
    return count


def _drop_dead_nodes(graph: Any) -> None:
    """Nodes whose outputs nobody reads (the masks' and shapes' arithmetic the fused
    kernels replaced), and the constants only they read."""
    outputs = {item.name for item in graph.output}
    while True:
        consumers = _consumers(graph)
        dead = [
            node
            for node in graph.node
            if not any(consumers.get(name) or name in outputs for name in node.output)
        ]
        if not dead:
            break
        for node in dead:
            graph.node.remove(node)
    read = {name for node in graph.node for name in node.input}
    unused = [item for item in graph.initializer if item.name not in read]
    for item in unused:
        graph.initializer.remove(item)
