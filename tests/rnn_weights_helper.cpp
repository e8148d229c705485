// The tapeflow side of keras_rnn_check.py: loads Keras-named weights from
// its .npz into nn::LSTM and nn::GRU by name, runs them on its inputs and
// compares with its NumPy reference. Exit 0 when both agree, 1 otherwise.
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

namespace {

/** Assigns every weight of `layer` from the archive entry of its name. */
void load_by_name(tpf::nn::Module& layer,
                  const std::map<std::string, tpf::Tensor>& arrays) {
  for (auto& [name, v] : layer.named_parameters()) {
    const auto it = arrays.find(name);
    if (it == arrays.end())
      throw tpf::ValueError("[rnn_weights_helper] no array named " + name);
    v.assign(it->second);
  }
}

bool agrees(const char* what, const tpf::Tensor& got,
            const tpf::Tensor& expected) {
  const auto a = got.to_vector<double>(), b = expected.to_vector<double>();
  double worst = a.size() == b.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]));
  std::printf("%s: largest difference %.3g\n", what, worst);
  return worst < 1e-12;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: rnn_weights_helper FILE.npz\n");
    return 2;
  }
  try {
    const auto arrays = tpf::io::load_npz_map(argv[1]);
    const tpf::Tensor& x = arrays.at("x");
    const tpf::nn::RNNOptions options{.return_sequences = true,
                                      .dtype = tpf::float64};
    tpf::nn::LSTM lstm(4, options);
    tpf::nn::GRU gru(4, options);
    lstm.build_for(x.shape(), x.device());
    gru.build_for(x.shape(), x.device());
    load_by_name(lstm, arrays);
    load_by_name(gru, arrays);
    const bool ok = agrees("lstm", lstm(x), arrays.at("expected_lstm")) &
                    agrees("gru", gru(x), arrays.at("expected_gru"));
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
