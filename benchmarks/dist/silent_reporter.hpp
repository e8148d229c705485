#pragma once
// The reporter of the ranks that run every benchmark case but print nothing
// (one rank reports; all must run the same cases for the messages to pair).
#include <benchmark/benchmark.h>

#include <vector>

class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};
