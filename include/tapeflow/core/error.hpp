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
/**
 * Memory ran out: a tensor larger than memory, or a device arena at its
 * limit (the message gives the request, in-use, cached and reserved bytes).
 * A DeviceError, as TensorFlow's and PyTorch's out-of-memory errors are.
 */
class ResourceExhaustedError : public DeviceError {
  using DeviceError::DeviceError;
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
