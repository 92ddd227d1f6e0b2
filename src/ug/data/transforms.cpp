#include "ug/data/transforms.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <sstream>

#include "ug/core/random.h"

namespace ug::data::transforms {

namespace {

/** The input as a contiguous batch (N, C, H, W), whatever its own rank. */
struct Images {
  Tensor batch;
  int64_t n, c, h, w;
};

Images as_images(const Tensor& input, const char* op, bool need_channels) {
  const int64_t rank = input.dim();
  if (rank != 3 && rank != 4 && (need_channels || rank != 2))
    fail("[", op, "] expected an image (C, H, W) or a batch (N, C, H, W)", need_channels ? "" : " or (H, W)",
         ", got shape ", input.shape());
  const auto& s = input.shape();
  const int64_t n = rank == 4 ? s[0] : 1, c = rank >= 3 ? s[rank - 3] : 1;
  const int64_t h = s[rank - 2], w = s[rank - 1];
  return {input.detach().contiguous().view({n, c, h, w}), n, c, h, w};
}

/** The input's shape with its last two sizes replaced. */
Dims with_hw(const Tensor& input, int64_t h, int64_t w) {
  Dims out(input.shape().begin(), input.shape().end());
  out[out.size() - 2] = h;
  out[out.size() - 1] = w;
  return out;
}

/** Calls fn with a null pointer of the unsigned type as wide as dtype's elements: moving
 *  pixels does not care what they mean. */
template <class Fn> void by_width(DType dtype, Fn&& fn) {
  switch (itemsize(dtype)) {
    case 1: return fn(static_cast<uint8_t*>(nullptr));
    case 2: return fn(static_cast<uint16_t*>(nullptr));
    case 4: return fn(static_cast<uint32_t*>(nullptr));
    default: return fn(static_cast<uint64_t*>(nullptr));
  }
}

/** A value in [0, range) from one random word (multiply-shift: no division). */
int64_t below(uint32_t word, int64_t range) {
  return static_cast<int64_t>((static_cast<uint64_t>(word) * static_cast<uint64_t>(range)) >> 32);
}

/** The source index for padded position i of an axis of n pixels, or -1 for the fill value. */
int64_t source_index(int64_t i, int64_t n, PaddingMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PaddingMode::Constant: return -1;
    case PaddingMode::Edge: return i < 0 ? 0 : n - 1;
    case PaddingMode::Reflect: return i < 0 ? -i : 2 * (n - 1) - i;
    case PaddingMode::Symmetric: return i < 0 ? -i - 1 : 2 * n - 1 - i;
  }
  return -1;
}

template <class V> std::string list_str(const std::vector<V>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

}  // namespace

// ---- Normalize ------------------------------------------------------------------------------

Normalize::Normalize(std::vector<double> mean, std::vector<double> std, bool inplace)
    : mean_(std::move(mean)), std_(std::move(std)), inplace_(inplace) {
  if (mean_.empty() || std_.empty()) fail("[Normalize] mean and std need at least one value each");
  for (double s : std_)
    if (s == 0 || !std::isfinite(s)) fail("[Normalize] std ", list_str(std_), " has a zero or non-finite value");
}

Tensor Normalize::operator()(const Tensor& input) const {
  if (input.dtype() != DType::Float32 && input.dtype() != DType::Float64)
    fail<TypeError>("[Normalize] expected a float32 or float64 image, got ", input.dtype(),
                    " (ToTensor converts uint8 images)");
  const Images im = as_images(input, "Normalize", true);
  for (const auto* values : {&mean_, &std_})
    if (values->size() != 1 && static_cast<int64_t>(values->size()) != im.c)
      fail("[Normalize] ", values == &mean_ ? "mean " : "std ", list_str(*values), " has ", values->size(),
           " values for an image with ", im.c, " channels (shape ", input.shape(), ")");
  Tensor out = empty_like(im.batch);
  const int64_t plane = im.h * im.w;
  auto run = [&]<class T>(T*) {
    const T* src = im.batch.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    for (int64_t i = 0; i < im.n * im.c; ++i) {
      const size_t ch = static_cast<size_t>(i % im.c);
      // As torchvision: subtract and divide in the image's dtype.
      const T m = static_cast<T>(mean_[mean_.size() == 1 ? 0 : ch]);
      const T s = static_cast<T>(std_[std_.size() == 1 ? 0 : ch]);
      const T* a = src + i * plane;
      T* b = dst + i * plane;
      for (int64_t j = 0; j < plane; ++j) b[j] = (a[j] - m) / s;
    }
  };
  if (input.dtype() == DType::Float32) run(static_cast<float*>(nullptr));
  else run(static_cast<double*>(nullptr));
  out = out.view(input.shape());
  if (!inplace_) return out;
  Tensor target = input;
  target.copy_(out);
  return target;
}

std::string Normalize::repr() const {
  return "Normalize(mean=" + list_str(mean_) + ", std=" + list_str(std_) + (inplace_ ? ", inplace=True)" : ")");
}

// ---- RandomCrop -----------------------------------------------------------------------------

PaddingMode padding_mode_from_name(const std::string& name) {
  if (name == "constant") return PaddingMode::Constant;
  if (name == "edge") return PaddingMode::Edge;
  if (name == "reflect") return PaddingMode::Reflect;
  if (name == "symmetric") return PaddingMode::Symmetric;
  fail("[RandomCrop] padding_mode must be 'constant', 'edge', 'reflect' or 'symmetric', got '", name, "'");
}

RandomCrop::RandomCrop(std::vector<int64_t> size, std::vector<int64_t> padding, bool pad_if_needed, double fill,
                       PaddingMode padding_mode)
    : pad_if_needed_(pad_if_needed), fill_(fill), mode_(padding_mode) {
  if (size.size() != 1 && size.size() != 2)
    fail("[RandomCrop] size must be one number or (height, width), got ", list_str(size));
  height_ = size[0];
  width_ = size.back();
  if (height_ <= 0 || width_ <= 0) fail("[RandomCrop] size must be positive, got ", list_str(size));
  switch (padding.size()) {
    case 0: left_ = top_ = right_ = bottom_ = 0; break;
    case 1: left_ = top_ = right_ = bottom_ = padding[0]; break;
    case 2: left_ = right_ = padding[0], top_ = bottom_ = padding[1]; break;
    case 4: left_ = padding[0], top_ = padding[1], right_ = padding[2], bottom_ = padding[3]; break;
    default: fail("[RandomCrop] padding must have 1, 2 or 4 values, got ", list_str(padding));
  }
  if (std::min({left_, top_, right_, bottom_}) < 0) fail("[RandomCrop] padding must be >= 0, got ", list_str(padding));
}

Tensor RandomCrop::operator()(const Tensor& input) const {
  const Images im = as_images(input, "RandomCrop", false);
  int64_t left = left_, top = top_, right = right_, bottom = bottom_;
  if (pad_if_needed_ && im.w + left + right < width_) {
    const int64_t more = width_ - (im.w + left + right);
    left += more;
    right += more;
  }
  if (pad_if_needed_ && im.h + top + bottom < height_) {
    const int64_t more = height_ - (im.h + top + bottom);
    top += more;
    bottom += more;
  }
  const int64_t padded_h = im.h + top + bottom, padded_w = im.w + left + right;
  if (padded_h < height_ || padded_w < width_)
    fail("[RandomCrop] crop size (", height_, ", ", width_, ") is larger than the padded image (", padded_h, ", ",
         padded_w, ") of shape ", input.shape());
  if (mode_ != PaddingMode::Constant && (left || right || top || bottom)) {
    // A mirror or edge needs pixels to copy; torch's reflect pads less than the size.
    if (im.h == 0 || im.w == 0)
      fail("[RandomCrop] padding a ", im.h, "x", im.w, " image needs padding_mode='constant'");
    const int64_t slack = mode_ == PaddingMode::Reflect ? 1 : 0;
    if (mode_ != PaddingMode::Edge && (std::max(left, right) > im.w - slack || std::max(top, bottom) > im.h - slack))
      fail("[RandomCrop] padding (", left, ", ", top, ", ", right, ", ", bottom, ") is too large to ",
           mode_ == PaddingMode::Reflect ? "reflect" : "mirror", " a ", im.h, "x", im.w, " image");
  }
  Tensor out = empty({im.n, im.c, height_, width_}, {.dtype = input.dtype(), .device = {}});
  const Tensor fill = full({1}, Scalar(fill_), {.dtype = input.dtype(), .device = {}});
  const RandomStream random = default_generator().reserve(2 * static_cast<uint64_t>(im.n));
  std::vector<int64_t> rows(height_), cols(width_);
  by_width(input.dtype(), [&]<class E>(E*) {
    const E* src = static_cast<const E*>(im.batch.raw_data());
    E* dst = static_cast<E*>(out.raw_data());
    E fill_value;
    std::memcpy(&fill_value, fill.raw_data(), sizeof(E));
    for (int64_t i = 0; i < im.n; ++i) {
      const int64_t y0 = below(random.word(2 * i), padded_h - height_ + 1) - top;
      const int64_t x0 = below(random.word(2 * i + 1), padded_w - width_ + 1) - left;
      for (int64_t y = 0; y < height_; ++y) rows[y] = source_index(y0 + y, im.h, mode_);
      for (int64_t x = 0; x < width_; ++x) cols[x] = source_index(x0 + x, im.w, mode_);
      // Columns [inner_begin, inner_end) come straight from the image: one memcpy per row.
      const int64_t inner_begin = std::clamp<int64_t>(-x0, 0, width_);
      const int64_t inner_end = std::clamp<int64_t>(im.w - x0, inner_begin, width_);
      for (int64_t c = 0; c < im.c; ++c) {
        const E* plane = src + (i * im.c + c) * im.h * im.w;
        for (int64_t y = 0; y < height_; ++y) {
          E* d = dst + ((i * im.c + c) * height_ + y) * width_;
          if (rows[y] < 0) {
            std::fill(d, d + width_, fill_value);
            continue;
          }
          const E* s = plane + rows[y] * im.w;
          for (int64_t x = 0; x < inner_begin; ++x) d[x] = cols[x] < 0 ? fill_value : s[cols[x]];
          if (inner_end > inner_begin)
            std::memcpy(d + inner_begin, s + x0 + inner_begin, (inner_end - inner_begin) * sizeof(E));
          for (int64_t x = inner_end; x < width_; ++x) d[x] = cols[x] < 0 ? fill_value : s[cols[x]];
        }
      }
    }
  });
  return out.view(with_hw(input, height_, width_));
}

std::string RandomCrop::repr() const {
  static const char* modes[] = {"constant", "edge", "reflect", "symmetric"};
  std::ostringstream os;
  os << "RandomCrop(size=(" << height_ << ", " << width_ << "), padding=(" << left_ << ", " << top_ << ", " << right_
     << ", " << bottom_ << "), pad_if_needed=" << (pad_if_needed_ ? "True" : "False") << ", fill=" << fill_
     << ", padding_mode=" << modes[static_cast<int>(mode_)] << ")";
  return os.str();
}

// ---- RandomHorizontalFlip --------------------------------------------------------------------

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  if (!(p >= 0 && p <= 1)) fail("[RandomHorizontalFlip] p must be in [0, 1], got ", p);
}

Tensor RandomHorizontalFlip::operator()(const Tensor& input) const {
  const Images im = as_images(input, "RandomHorizontalFlip", false);
  Tensor out = empty_like(im.batch);
  const RandomStream random = default_generator().reserve(static_cast<uint64_t>(im.n));
  const int64_t image = im.c * im.h * im.w;
  by_width(input.dtype(), [&]<class E>(E*) {
    const E* src = static_cast<const E*>(im.batch.raw_data());
    E* dst = static_cast<E*>(out.raw_data());
    for (int64_t i = 0; i < im.n; ++i) {
      const E* a = src + i * image;
      E* b = dst + i * image;
      if (!(uniform_float(random.word(i)) < p_)) {
        if (image > 0) std::memcpy(b, a, image * sizeof(E));
        continue;
      }
      for (int64_t row = 0; row < im.c * im.h; ++row)
        std::reverse_copy(a + row * im.w, a + (row + 1) * im.w, b + row * im.w);
    }
  });
  return out.view(input.shape());
}

std::string RandomHorizontalFlip::repr() const {
  std::ostringstream os;
  os << "RandomHorizontalFlip(p=" << p_ << ")";
  return os.str();
}

// ---- ToTensor -------------------------------------------------------------------------------

Tensor ToTensor::operator()(const Tensor& input) const {
  if (input.is_floating_point()) return input;
  if (input.dtype() != DType::UInt8 || input.dim() < 2 || input.dim() > 4)
    fail<TypeError>("[ToTensor] expected uint8 images (H, W), (H, W, C) or (N, H, W, C) or a float tensor, got ",
                    input.dtype(), " of shape ", input.shape());
  Tensor chw = input.detach();
  if (input.dim() == 2) chw = chw.unsqueeze(0);
  else if (input.dim() == 3) chw = chw.permute({2, 0, 1});
  else chw = chw.permute({0, 3, 1, 2});
  chw = chw.contiguous();
  // As torchvision's img.float().div(255), by table: exact and without a division per pixel.
  static const std::array<float, 256> scale = [] {
    std::array<float, 256> t{};
    for (int v = 0; v < 256; ++v) t[v] = static_cast<float>(v) / 255.0f;
    return t;
  }();
  Tensor out = empty(chw.shape(), {.dtype = DType::Float32, .device = {}});
  const uint8_t* src = chw.data_ptr<uint8_t>();
  float* dst = out.data_ptr<float>();
  for (int64_t i = 0; i < out.numel(); ++i) dst[i] = scale[src[i]];
  return out;
}

// ---- Compose and Lambda ---------------------------------------------------------------------

Compose::Compose(std::vector<TransformPtr> transforms) : transforms_(std::move(transforms)) {
  for (const TransformPtr& t : transforms_)
    if (!t) fail("[Compose] a transform is missing (null)");
}

Tensor Compose::operator()(const Tensor& input) const {
  Tensor x = input;
  for (const TransformPtr& t : transforms_) x = (*t)(x);
  return x;
}

std::string Compose::repr() const {
  std::string out = "Compose(\n";
  for (const TransformPtr& t : transforms_) out += "    " + t->repr() + "\n";
  return out + ")";
}

Lambda::Lambda(std::function<Tensor(const Tensor&)> fn) : fn_(std::move(fn)) {
  if (!fn_) fail("[Lambda] the function is empty");
}

}  // namespace ug::data::transforms
