"""The root causes the registry's records name (``Known.cause``): the bug each stands for, as
the title of its upstream issue states it (``conformance upstream`` groups records by cause
and writes one issue and one script per cause)."""

from __future__ import annotations

from conformance.jax_records import CAUSES as JAX_CAUSES

#: The bug each declared ``Known.cause`` stands for, as the issue's title states it.
CAUSES = {
    "cumop-declared-dtype":
        "CumOp (cumsum, cumprod) returns a 64-bit result where the graph declares the input's "
        "dtype: perform returns numpy's cumsum/cumprod of narrow ints, and from 3.3 on Numba's "
        "cumsum of narrow unsigned ints is int64",
    "pad-edge-empty-axis-check":
        "PyTensor 3.3's pad(mode='edge') asserts with SpecifyShape that each axis's edge slice "
        "has length 1, so padding an array with a length-0 axis raises even where that axis "
        "gets zero widths (numpy.pad returns the array unchanged)",
    "numba-238-nested-scan":
        "PyTensor 2.38's Numba linker computes a nested scan wrong (each outer step returns its "
        "input) when the NUMBA mode's rewrites ran with the Python linker, not with mode='NUMBA'",
    "reference-gather-elements-64":
        "The ONNX reference evaluator's GatherElements gathers with np.choose, which takes at "
        "most 64 choices: an axis longer than 64 raises ValueError",
    "numpy-dot-scal-zero":
        "numpy.dot of a 1x1 matrix and a matrix scales by the single element with BLAS scal, "
        "which sets the result to 0 for a 0 factor whatever the other operand holds (nan, "
        "inf); numpy.matmul and IEEE arithmetic give nan",
    "ort-expand-elimination-zero":
        "the ExpandElimination graph optimization removes an Expand whose constant target "
        "shape has a 0 where its input has length 1 (Unsqueeze(x[1]) then Expand to [0, 1] "
        "gives shape (1, 1)); disabled_optimizers=['ExpandElimination'] avoids it",
    "ort-reduce-uint32-signed":
        "ReduceMax and ReduceMin on uint32 and int64 compare as int32 from four elements on "
        "(the vectorised path), so values beyond int32's range land on the wrong side (uint32 "
        "from 2**31 up count as negative); fixed in 1.32",
    "ort-where-negative-zero":
        "Where returns +0.0 where it selects a -0.0 from X (and from a broadcast Y): its "
        "merge keeps X's selection only where it is nonzero",
    "ort-reduce-float16-zero-sign":
        "float16 ReduceMax and ReduceMin of opposite zeros from four elements on return the "
        "zero numpy does not (numpy: the first)",
    "min-as-negated-max":
        "pt.min of a signed integer tensor is built as -max(-x), which wraps at the dtype's "
        "minimum: min([0, -128]) of int8 is 0 (the default rewrites turn the graph into a Min "
        "and get -128)",
    "psd-solve-cholesky-lower":
        "The psd_solve_to_chol_solve rewrite turns solve(a, b, assume_a='pos', lower=False) "
        "into a solve through cholesky(a), which reads a's lower triangle, not the upper one "
        "the call asks for",
    "careduce-c-0d":
        "Max's and Min's C code generation fails for a 0-d input (NonZeroDimsCAReduce._c_all "
        "unpacks the five code parts Elemwise._c_all gives for a reduction over no axis into "
        "four)",
    "maximum-minimum-c-double":
        "C maximum/minimum go through double (the nan(\"\") branch of the scalar ops' C code), "
        "so 64-bit integers lose low bits in Elemwise maximum/minimum, Max/Min and softmax's "
        "inner max",
    "numpy-einsum-presum-zero-sign":
        "numpy 2.4's einsum(optimize=True) (its batched-matmul path) sums a contracted "
        "length-1 axis of each operand on its own before multiplying, and that sum turns -0.0 "
        "into +0.0: np.einsum('ij,ij->', [[-0.0]], [[-1.0]], optimize=True) is -0.0, not +0.0",
    "numpy-minmax-opposite-zeros":
        "the Python linker's float32/float64 maximum/minimum and Max/Min (numpy's SIMD loops) "
        "return x2 of two opposite zeros, the C code x1 as numpy documents "
        "(np.where(x1 >= x2, x1, x2))",
    "alloc-perform-zero-value":
        "Alloc.perform (the Python linker's alloc and broadcast_to) fills a size-1 zero value "
        "from np.zeros, so a -0.0 value comes out +0.0; the C code keeps -0.0",
    "scalar-add-impl-sum":
        "the scalar Add's Python impl is sum(inputs), which starts from the int 0, so "
        "-0.0 + -0.0 gives +0.0 wherever the Python linker runs scalar ops (Composite)",
    "reduce-max-min-nan":
        "ReduceMax and ReduceMin keep a nan only where it is the reduction's first element: "
        "ReduceMax([1, 2, nan, 4, 5]) is 5 (ONNX: 'similar to numpy', which propagates nan)",
    "reducesum-int64-low-bits":
        "ReduceSum on int64 loses low bits of values beyond 2**53, as if it added in "
        "double (uint64 sums and the reductions einsum inlines run on it too)",
    "eigen-sse2-int64-compare":
        "Sign, Max and Min on int64 tensors of 2+ elements look at the low 32 bits only "
        "(Eigen's SSE2 int64 packet comparisons, which these CPU kernels vectorise through)",
    "nlinalg-perform-float16":
        "Det, MatrixInverse and SLogDet accept float16 (declaring a float32 result) but "
        "perform hands it to numpy.linalg, which has no float16, and raises",
    "numpy-add-at-broadcast-values":
        "numpy 2.4's ufunc.at with a 2-d index array and values that broadcast over its "
        "leading axis reads the values past their buffer: np.add.at(np.zeros(4), "
        "np.array([[0, 0], [3, 0], [0, 0]]), np.array([1., 2.])) gives [3, 0, 0, 1.6e-322], "
        "not [8, 0, 0, 1]",
    "numba-fastmath-reassociates":
        "PyTensor compiles Numba with fast-math on (numba__fastmath), which lets LLVM reorder "
        "a product or sum of three operands: where numpy's left-to-right fold overflows and "
        "another order does not (or the other way round), the result is finite (or inf)",
    "numba-fastmath-reciprocal":
        "PyTensor compiles Numba with fast-math on (numba__fastmath), whose arcp flag lets "
        "LLVM divide by a divisor that is constant along the inner loop as x * (1 / y): the "
        "quotient is up to 2 ulp off numpy's correctly rounded x / y, and inf where 1 / y "
        "overflows (a subnormal y) though x / y is finite",
    "numba-int-min-div-minus-one":
        "PyTensor's Numba IntDiv and Mod of narrow signed ints compute in their own width: "
        "the minimum // -1 gives 0 (numpy wraps to the minimum) and the minimum % -1 traps "
        "(SIGFPE) on x86, where numpy gives 0",
    "numba-linalg-nonfinite":
        "the Numba kernels of Det, SLogDet and MatrixInverse (numba's numpy.linalg) raise "
        "LinAlgError('Array must not contain infs or NaNs') where perform (numpy) returns nan "
        "or inf: det([[inf]]) is inf",
    "openblas-getf2-subnormal-pivot":
        "the OpenBLAS in numpy's and scipy's wheels factorises a float64 matrix whose LU "
        "meets a subnormal pivot without dividing that pivot's column by it: "
        "det([[5e-324, 1], [5e-324, 2]]) is 1e-323, not 5e-324 (reference LAPACK's getf2 "
        "divides when the pivot is below sfmin)",
    "jax-det-closed-form":
        "jax.numpy.linalg.det computes 2x2 and 3x3 determinants by the cofactor formula, "
        "which is not backward stable: an ill-conditioned 3x3 matrix loses cond * u "
        "relative accuracy where an LU keeps it (det of 2.000009 * I + 2 off the diagonal: "
        "4.8600057e-10, not 4.8600073e-10)",
    "reference-gather-empty":
        "the reference evaluator's Gather (numpy.take) checks no index when its output is "
        "empty; the ONNX spec makes any out-of-range index an error (ONNX Runtime raises)",
    "elemwise-py-frompyfunc":
        "the Python linker's Elemwise runs scalar ops without a matching numpy ufunc (3+ "
        "operand Add/Mul, Composite, Cast) through numpy.frompyfunc on Python ints and "
        "floats: integers raise OverflowError or leave their dtype where C wraps, and float32 "
        "is computed in double",
    "numba-int-division-float32":
        "the Numba backend divides integers in float32 (true_div of 8/16-bit integers, and "
        "reciprocal of 32/64-bit ones as np.float32(1) / x) and returns that value as the "
        "float64 result PyTensor declares: 1/3 is 0.3333333432674408",
    "numba-reduce-empty-axis":
        "the Numba backend's max, min, argmax and argmin over a length-0 axis return a result "
        "where numpy, and PyTensor's Python and C backends, raise ValueError",
    "ort-float16-unrounded-cast":
        "ONNX Runtime's CPU float16 Add, Sub, Mul, Exp and Sqrt compute in float32, and a Cast "
        "to float32 that follows gets the float32 value unrounded: Cast(Add(x, x)) of float16 "
        "-65504 gives -131008 where float16 gives -inf (with graph optimizations disabled too)",
    "ort-float16-loop-zero-sign":
        "ONNX Runtime's float16 Mul and Add inside a Loop body give -0.0 for "
        "1*0 + 0.5*(-2**-24), where each op rounded to float16 gives 0.0 (outside a Loop, "
        "the same ops give 0.0)",
    "numba-minmax-nan":
        "the Numba backend's Max and Min skip nan where numpy propagates it: max([nan, 1]) is "
        "1, the max of an all-nan slice is -inf",
    "numba-careduce-bool":
        "the Numba backend's Max and Min of bools give True for max(all False) and False for "
        "min(all True), over any axis (0-d too, without rewrites)",
    "numba-sum-acc-dtype":
        "the Numba backend ignores a Sum's acc_dtype narrower than its output: "
        "sum(int8, acc_dtype='int8') of [127, 127] is 254, not -2",
    "numba-sigmoid-int-min":
        "the Numba backend's sigmoid of a signed integer negates it in its own dtype, so at "
        "the dtype's minimum -x wraps and sigmoid(-2**31) is 1.0 instead of 0.0",
    "float-int-div-floor":
        "the C and Numba backends' IntDiv of floats is floor(x / y) (C: of |x| / |y|, with a "
        "sign fix-up by fmod where the signs differ), where numpy's floor_divide (PyTensor's "
        "Python backend) subtracts fmod first: 1 // 0.1 is 10.0 against 9.0, 0.001 // -1e-8 is "
        "-100001.0 in C against -100000.0, inf // 1 is inf against nan",
    "numba-reshape-infers-empty":
        "the Numba backend's Reshape infers a -1 for a size-0 input where numpy refuses the "
        "ambiguous shape (cannot reshape array of size 0)",
    "numba-split-one":
        "the Numba backend's Split into one part returns the input with a new leading axis "
        "(shape (1, 0, 0) for a (0, 0) input); from PyTensor 3.3 it returns a 1-tuple, which "
        "the output's DeepCopyOp cannot type",
    "numba-scalar-int-add-widens":
        "the Numba backend's ScalarFromTensor and scalar Add of 8/16/32-bit integers and bools "
        "return int64 or uint64 where PyTensor declares the input dtype",
    "numba-composite-int-widens":
        "the Numba backend computes the scalar ops of an 8/16/32-bit integer Composite in 64 "
        "bits and wraps only its result: abs(9*9*3 + 0) is -13 in int8 (op by op: 13)",
    "numba-arange-double":
        "the Numba backend's ARange computes its length through double, so 64-bit bounds "
        "above 2**53 give the wrong length",
    "numba-arange-bool":
        "the Numba backend cannot compile ARange of bools (numba TypingError)",
    "numba-int-dot-float":
        "the Numba backend's integer Dot computes in floating point (float32 for 16-bit "
        "operands): int16 32767 * 513 is 32256, not numpy's wrapped 32255",
    "numba-int-batched-dot":
        "the Numba backend cannot compile BatchedDot of integer or bool operands (numba "
        "TypingError), nor the batched einsum built on it",
    "numba-matmul-batched":
        "the NUMBA mode's rewrites reshape a matmul's empty broadcast batch with -1, which "
        "Numba refuses (total size of new array must be unchanged)",
    "matmul-empty-batch-dot":
        "PyTensor's fast_run rewrites make a matmul of a length-1 batch against an empty batch "
        "a Dot of the squeezed operand, reshaped to the broadcast batch after: the sizes do "
        "not match (numpy: cannot reshape array of size 0), so the rewritten graph raises "
        "where the graph as built returns an empty result",
    "numba-det-narrow-int":
        "the Numba backend's Det of a bool or 8/16-bit integer matrix returns float32 where "
        "PyTensor declares float64",
    "advinc1-perform-broadcast-check":
        "AdvancedIncSubtensor1.perform checks runtime broadcasting by aligning y against x "
        "from the right and y's first axis against the index, and raises 'Runtime "
        "broadcasting not allowed' on a valid y (the 1-d C code checks correctly; float16 "
        "and other cases fall back to perform)",
    "numba-argsort-ties":
        "the Numba backend's argsort(kind='quicksort') orders equal elements unlike numpy's "
        "(PyTensor's Python and C backends): the order of ties differs between PyTensor's "
        "backends",
    "numba-sign-unsigned":
        "the Numba backend's sign of an unsigned integer with its top bit set is the dtype's "
        "maximum (sign(uint8 200) is 255), as if it were negative",
    "numba-unique-bool":
        "the NUMBA mode's Unique of a bool array with return_index, return_inverse and "
        "return_counts fails an AssertionError (a float64 output where bool belongs)",
    "numba-searchsorted-sorter":
        "the Numba backend's SearchsortedOp with a sorter raises TypeError: can't unbox "
        "array from PyObject into native value",
    "numba-index-unchecked":
        "the Numba backend's advanced indexing checks no bounds: an out-of-range index reads "
        "or writes past the buffer (garbage, heap corruption, a crash) where numpy raises "
        "IndexError",
    "numba-softmax-0d-nonfinite":
        "PyTensor's Numba Softmax and LogSoftmax of a 0-d inf or nan give 1 and -0.0 (and "
        "the softmax gradient 0), where the graph's x - max(x) is nan",
    "numba-softmax-0d":
        "PyTensor 2.38's Numba Softmax, LogSoftmax and SoftmaxGrad cannot compile a 0-d input "
        "(numba TypingError); 3.x's softmax of elemwise ops and a Max compiles it",
    "numba-softmax-int8-float32":
        "PyTensor 2.38's Softmax of an 8-bit integer is typed int8 but computes floats: "
        "float32 in its Numba code, float16 in its Python code (numpy's exp of int8)",
    "numba-softmax-int-axis-unnormalised":
        "PyTensor 2.38's Numba Softmax of an integer matrix along an axis returns "
        "exp(x - max(x)) without dividing by the sum: softmax([[0, 1]], axis=-1) is "
        "[[0.37, 1.0]]",
    "numba-softmax-int-no-wrap":
        "PyTensor 2.38's Numba Softmax of 16/32-bit integers computes x - max(x) in a wider "
        "type where its Python code wraps in the input dtype: softmax(int16 [32767, -32768]) "
        "is [1, 0] on Numba, [0.27, 0.73] in Python",
    "jax-scan-nitsot-buffer":
        "PyTensor 3's scan_save_mem gives the per-step output read by rows[-2:] a 2-row "
        "buffer whatever the step count, and the JAX Scan asserts that the trace fills it: "
        "one step raises AssertionError",
    **JAX_CAUSES,
}
