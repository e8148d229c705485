// DLPack exchange: round trips without a copy, strided views, the deleter
// called exactly once both ways, the dtype table, device tensors and errors.
#include <dlpack/dlpack.h>

#include <memory>
#include <vector>

#include "support/check.hpp"
#include "support/device.hpp"
#include "tapeflow/dlpack.hpp"

namespace {

/** A producer's tensor over a std::vector, counting its deleter's calls. */
struct Foreign {
  std::vector<double> values;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
  int* deleted;

  Foreign(std::vector<double> v, std::vector<int64_t> shape_,
          std::vector<int64_t> strides_, int* deleted_counter)
      : values(std::move(v)),
        shape(std::move(shape_)),
        strides(std::move(strides_)),
        deleted(deleted_counter) {
    DLTensor& t = managed.dl_tensor;
    t.data = values.data();
    t.device = {kDLCPU, 0};
    t.ndim = static_cast<int>(shape.size());
    t.dtype = {kDLFloat, 64, 1};
    t.shape = shape.data();
    t.strides = strides.empty() ? nullptr : strides.data();
    t.byte_offset = 0;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) {
      auto* f = static_cast<Foreign*>(self->manager_ctx);
      ++*f->deleted;
      delete f;
    };
  }
};

std::vector<int64_t> shape_of(const DLTensor& t) {
  return {t.shape, t.shape + t.ndim};
}
std::vector<int64_t> strides_of(const DLTensor& t) {
  return {t.strides, t.strides + t.ndim};
}

}  // namespace

TEST_CASE("dlpack: a CPU tensor goes out and comes back without a copy") {
  const auto t = tpf::tensor<float>({{1, 2, 3}, {4, 5, 6}});
  DLManagedTensor* m = tpf::to_dlpack(t);
  const DLTensor& dl = m->dl_tensor;
  CHECK(dl.device.device_type == kDLCPU);
  CHECK(dl.device.device_id == 0);
  CHECK(dl.dtype.code == kDLFloat);
  CHECK(dl.dtype.bits == 32);
  CHECK(dl.dtype.lanes == 1);
  CHECK(shape_of(dl) == std::vector<int64_t>{2, 3});
  CHECK(strides_of(dl) == std::vector<int64_t>{3, 1});
  CHECK(dl.byte_offset == 0);
  CHECK(dl.data == t.raw_data());

  const tpf::Tensor u = tpf::from_dlpack(m);
  CHECK(u.raw_data() == t.raw_data());
  CHECK(u.shape() == tpf::Shape{2, 3});
  CHECK(u.dtype() == tpf::float32);
  CHECK(u.is_contiguous());
  CHECK_CLOSE(u, t);
  CHECK_CLOSE(tpf::sum(u), tpf::scalar(21.0));
}

TEST_CASE("dlpack: a strided view keeps its strides and offset both ways") {
  const auto base =
      tpf::reshape(tpf::arange(0.0, 24.0, 1.0, tpf::float64), {4, 6});
  // Rows 1..3, columns 2..5, transposed: strides {1, 6}, offset 8 elements.
  const auto view = tpf::transpose(tpf::slice(base, {1, 2}, {3, 4}));
  REQUIRE_FALSE(view.is_contiguous());
  DLManagedTensor* m = tpf::to_dlpack(view);
  const DLTensor& dl = m->dl_tensor;
  CHECK(shape_of(dl) == std::vector<int64_t>{4, 3});
  CHECK(strides_of(dl) == std::vector<int64_t>{1, 6});
  CHECK(dl.byte_offset == 8 * sizeof(double));
  CHECK(dl.data == base.raw_data());
  CHECK(dl.dtype.code == kDLFloat);
  CHECK(dl.dtype.bits == 64);

  const tpf::Tensor u = tpf::from_dlpack(m);
  CHECK_FALSE(u.is_contiguous());
  CHECK(u.strides() == tpf::Shape{1, 6});
  CHECK(u.raw_data() == view.raw_data());
  CHECK_CLOSE(u, view);
  CHECK(u.contiguous().to_vector<double>() ==
        std::vector<double>{8, 14, 20, 9, 15, 21, 10, 16, 22, 11, 17, 23});
}

TEST_CASE("dlpack: to_dlpack keeps the buffer alive until the deleter runs") {
  std::weak_ptr<tpf::Storage> buffer;
  DLManagedTensor* m = nullptr;
  {
    const auto t = tpf::full({1000}, 3.0);
    buffer = t.impl_ptr()->storage;
    m = tpf::to_dlpack(t);
  }
  REQUIRE_FALSE(buffer.expired());
  CHECK(static_cast<float*>(m->dl_tensor.data)[999] == 3.0f);
  m->deleter(m);
  CHECK(buffer.expired());
}

TEST_CASE(
    "dlpack: from_dlpack calls the producer's deleter once, when the "
    "last tensor onto its memory goes") {
  int deleted = 0;
  auto* f = new Foreign({1, 2, 3, 4, 5, 6}, {2, 3}, {}, &deleted);
  double* memory = f->values.data();
  {
    tpf::Tensor t = tpf::from_dlpack(&f->managed);
    CHECK(t.raw_data() == memory);
    CHECK(t.to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6});
    tpf::Tensor row = tpf::slice(t, {1, 0}, {1, 3});  // a view: shares it
    t = tpf::Tensor();
    CHECK(deleted == 0);
    CHECK(row.to_vector<double>() == std::vector<double>{4, 5, 6});
    // Zero-copy: the producer sees a write through tapeflow's pointer.
    static_cast<double*>(row.raw_data())[0] = 40;
    CHECK(memory[3] == 40);
  }
  CHECK(deleted == 1);

  // Strided foreign memory (every other element) and a tensor without
  // elements, whose deleter runs at once.
  auto* g = new Foreign({0, 1, 2, 3, 4, 5}, {3}, {2}, &deleted);
  CHECK(tpf::from_dlpack(&g->managed).to_vector<double>() ==
        std::vector<double>{0, 2, 4});
  CHECK(deleted == 2);
  auto* empty = new Foreign({}, {0, 4}, {}, &deleted);
  const tpf::Tensor e = tpf::from_dlpack(&empty->managed);
  CHECK(deleted == 3);
  CHECK(e.shape() == tpf::Shape{0, 4});

  // Both ways at once: the import holds the export, which holds the buffer.
  const auto x = tpf::tensor<int64_t>({7, 8, 9});
  std::weak_ptr<tpf::Storage> buffer;
  {
    tpf::Tensor y = tpf::from_dlpack(tpf::to_dlpack(x));
    buffer = y.impl_ptr()->storage;
    CHECK(y.raw_data() == x.raw_data());
  }
  CHECK(buffer.expired());  // the import's storage is gone, x's is not
  CHECK(x.to_vector<int64_t>() == std::vector<int64_t>{7, 8, 9});
}

TEST_CASE("dlpack: every dtype DLPack 0.6 can express maps both ways") {
  struct Row {
    tpf::DType dtype;
    uint8_t code;
    uint8_t bits;
  };
  const Row rows[] = {{tpf::bool_, kDLUInt, 8},
                      {tpf::int32, kDLInt, 32},
                      {tpf::int64, kDLInt, 64},
                      {tpf::float32, kDLFloat, 32},
                      {tpf::float64, kDLFloat, 64}};
  for (const Row& row : rows) {
    CAPTURE(row.dtype);
    const auto t = tpf::tensor<double>({1, 0, 1}).cast(row.dtype);
    DLManagedTensor* m = tpf::to_dlpack(t);
    CHECK(m->dl_tensor.dtype.code == row.code);
    CHECK(m->dl_tensor.dtype.bits == row.bits);
    CHECK(m->dl_tensor.dtype.lanes == 1);
    const tpf::Tensor u = tpf::from_dlpack(m);
    CHECK(u.dtype() == row.dtype);
    CHECK(u.to_vector<double>() == std::vector<double>{1, 0, 1});
  }
  // DLPack 0.8's bool code reads as bool_ too.
  const auto b = tpf::tensor<bool>({true, false});
  DLManagedTensor* m = tpf::to_dlpack(b);
  m->dl_tensor.dtype.code = 6;
  CHECK(tpf::from_dlpack(m).dtype() == tpf::bool_);
}

TEST_CASE("dlpack: a device tensor is exported as kDLCUDA with its index") {
  testing::install_host_device();
  const auto& devices = testing::test_devices();
  REQUIRE(devices.error.empty());
  const tpf::Device dev = devices.devices.at(0);
  const auto t = tpf::tensor<float>({1.5f, -2.0f, 4.0f}).to(dev);
  DLManagedTensor* m = tpf::to_dlpack(t);
  CHECK(m->dl_tensor.device.device_type == kDLCUDA);
  CHECK(m->dl_tensor.device.device_id == dev.index);
  CHECK(m->dl_tensor.data == t.impl()->storage->data());
  const tpf::Tensor u = tpf::from_dlpack(m);
  CHECK(u.device() == dev);
  CHECK(u.raw_data() == t.raw_data());
  CHECK(u.cpu().to_vector<float>() == std::vector<float>{1.5f, -2.0f, 4.0f});
}

TEST_CASE(
    "dlpack: errors name the function, the expected and the actual, "
    "and take nothing") {
  CHECK_THROWS_WITH_AS(tpf::to_dlpack(tpf::constant("text")),
                       "[to_dlpack] expected a dtype DLPack can express "
                       "(bool, int32, int64, float32, float64), got string",
                       tpf::DTypeError);
  CHECK_THROWS_WITH_AS(tpf::to_dlpack(tpf::Tensor()),
                       doctest::Contains("[to_dlpack] expected a defined"),
                       tpf::ValueError);
  CHECK_THROWS_WITH_AS(tpf::from_dlpack(nullptr),
                       "[from_dlpack] expected a DLManagedTensor, got null",
                       tpf::ValueError);

  int deleted = 0;
  auto* f = new Foreign({1, 2, 3, 4}, {2, 2}, {}, &deleted);
  DLTensor& dl = f->managed.dl_tensor;
  auto expect_error = [&](const std::string& message) {
    CHECK_THROWS_WITH(tpf::from_dlpack(&f->managed),
                      doctest::Contains(message.c_str()));
    CHECK(deleted == 0);  // the caller still owns it
  };
  dl.dtype = {kDLBfloat, 16, 1};
  expect_error(
      "[from_dlpack] expected int32, int64, float32, float64, or "
      "uint8/bool (read as bool), got bfloat16");
  dl.dtype = {kDLFloat, 16, 1};
  expect_error("got float16");
  dl.dtype = {kDLFloat, 32, 4};
  expect_error("got float32x4");
  dl.dtype = {kDLInt, 8, 1};
  expect_error("got int8");
  dl.dtype = {kDLFloat, 64, 1};

  dl.device = {kDLOpenCL, 0};
  expect_error(
      "[from_dlpack] expected device type kDLCPU (1), kDLCUDA (2), "
      "kDLCUDAHost (3) or kDLCUDAManaged (13), got 4");
  dl.device = {kDLCUDA, -1};
  expect_error("[from_dlpack] expected a device index in [0, 32767], got -1");
  dl.device = {kDLCPU, 0};

  // The last element reached at INT64_MAX: one past it wrapped (UB).
  const int64_t far[] = {INT64_MAX - 1, 1};
  dl.strides = const_cast<int64_t*>(far);
  expect_error("[from_dlpack] expected the view's extent to fit in int64");
  dl.strides = nullptr;

  const int64_t reversed[] = {2, -1};
  dl.strides = const_cast<int64_t*>(reversed);
  expect_error(
      "[from_dlpack] expected non-negative strides, got -1 along "
      "axis 1");
  dl.strides = nullptr;
  dl.ndim = 9;
  expect_error("[from_dlpack] expected a rank in [0, 8], got 9");
  dl.ndim = 2;

  int64_t* const extents = dl.shape;
  dl.shape = nullptr;
  expect_error("[from_dlpack] expected 2 extents for rank 2, got a null shape");
  dl.shape = extents;
  void* const values = dl.data;
  dl.data = nullptr;
  expect_error(
      "[from_dlpack] expected data for 4 elements, got a null pointer");
  dl.data = values;
  dl.byte_offset = 3;
  expect_error(
      "[from_dlpack] expected data + byte_offset aligned to the item size 8, "
      "got an address 3 bytes past it (byte_offset 3)");
  // An offset that wraps the pointer around to 8 bytes before the buffer.
  dl.byte_offset = UINT64_MAX - 7;
  expect_error(
      "[from_dlpack] expected data + byte_offset + 32 bytes within "
      "the address space, got data ");
  dl.byte_offset = 0;

  // uint8 values other than 0 and 1 are not bools.
  auto* bytes = new Foreign({0, 0}, {2}, {}, &deleted);
  reinterpret_cast<uint8_t*>(bytes->values.data())[1] = 7;
  bytes->managed.dl_tensor.dtype = {kDLUInt, 8, 1};
  CHECK_THROWS_WITH_AS(tpf::from_dlpack(&bytes->managed),
                       "[from_dlpack] expected uint8 values 0 or 1 (tapeflow "
                       "reads 8-bit unsigned as bool), got 7 at element 1",
                       tpf::ValueError);
  CHECK(deleted == 0);
  bytes->managed.deleter(&bytes->managed);
  f->managed.deleter(&f->managed);
  CHECK(deleted == 2);
}
