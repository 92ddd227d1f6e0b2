// The whole public C++ API of unigrad: #include "ug/ug.h".
#pragma once

#include "ug/core/allocator.h"
#include "ug/core/device.h"
#include "ug/core/dtype.h"
#include "ug/core/random.h"
#include "ug/core/tensor.h"
#include "ug/core/thread_pool.h"
#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"
#include "ug/ops/linalg.h"
#include "ug/ops/random.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"
#include "ug/version.h"
