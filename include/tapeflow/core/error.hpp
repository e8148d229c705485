#pragma once
#include <stdexcept>
#include <string>

namespace tapeflow {

/** Base of every error tapeflow throws; what() starts with "[op_name]". */
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class ShapeError : public Error {
  using Error::Error;
};
class DTypeError : public Error {
  using Error::Error;
};
class DeviceError : public Error {
  using Error::Error;
};
class IndexError : public Error {
  using Error::Error;
};
class IOError : public Error {
  using Error::Error;
};
class ValueError : public Error {
  using Error::Error;
};
/** Data that is there but wrong: a bad checksum, a truncated record. */
class DataLossError : public Error {
  using Error::Error;
};
/** Memory (or another resource) ran out: a tensor larger than memory. */
class ResourceExhaustedError : public Error {
  using Error::Error;
};
/** End of data from an explicit iterator's get_next() or a closed queue. */
class OutOfRangeError : public Error {
  using Error::Error;
};

/** An operation on something already shut down, e.g. enqueue on a closed queue.
 */
class CancelledError : public Error {
  using Error::Error;
};

}  // namespace tapeflow
