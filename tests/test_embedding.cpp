// Embedding: rows of its table by id, the id checks, the gradient.
#include "support/check.hpp"

namespace nn = tpf::nn;

TEST_CASE("Embedding: rows of the table, id errors, gradient, int32 ids") {
  nn::Embedding emb(4, 2, {.embeddings_initializer = nn::constant(0.0)});
  tpf::Variable table = emb.embeddings();
  table.assign(tpf::tensor<float>({{0, 1}, {10, 11}, {20, 21}, {30, 31}}));
  const auto ids = tpf::tensor<int64_t>({{1, 0, 3}, {2, 2, 0}});
  const auto y = emb(ids);
  CHECK(y.shape() == tpf::Shape{2, 3, 2});
  CHECK(y.to_vector<float>() ==
        std::vector<float>{10, 11, 0, 1, 30, 31, 20, 21, 20, 21, 0, 1});
  CHECK_CLOSE(emb(tpf::cast(ids, tpf::int32)), y);
  tpf::GradientTape tape;
  const auto g = tape.gradient(tpf::sum(emb(ids)), {emb.embeddings()})[0];
  CHECK(g.to_vector<float>() == std::vector<float>{2, 2, 1, 1, 2, 2, 1, 1});
  CHECK(emb.named_parameters()[0].first == "embedding/embeddings");
  try {
    (void)emb(tpf::tensor<int64_t>({0, 4}));
    FAIL("expected an IndexError");
  } catch (const tpf::IndexError& e) {
    const std::string msg = e.what();
    CHECK(msg.rfind("[embedding]", 0) == 0);
    CHECK(msg.find("got 4") != std::string::npos);
  }
  testing::expect_error<tpf::IndexError>(
      [&] { (void)emb(tpf::tensor<int32_t>({-1})); }, "[embedding]");
  testing::expect_error<tpf::DTypeError>([&] { (void)emb(tpf::tensor({1.0})); },
                                         "[embedding]");
  testing::expect_error<tpf::ValueError>([] { nn::Embedding(0, 3); },
                                         "[embedding]");
  CHECK(emb(tpf::zeros({0, 5}, tpf::int64)).shape() == tpf::Shape{0, 5, 2});
}

TEST_CASE("summary of a model that starts with an Embedding takes int ids") {
  nn::Sequential model;
  model.add(nn::Embedding(10, 4, {.mask_zero = true}));
  model.add(nn::LSTM(3));
  const std::string table = model.summary({2, 5}, tpf::int64);
  CHECK(table.find("embedding (embedding)") != std::string::npos);
  CHECK(table.find("(2, 3)") != std::string::npos);
  CHECK(model.count_params() == 40 + 4 * (4 * 3 + 3 * 3 + 3));
}
