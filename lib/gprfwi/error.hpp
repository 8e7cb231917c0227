#pragma once
// Typed exceptions. Every message carries the numbers involved, so a user can
// act on it without reading the source. A library never calls exit().

#include <stdexcept>
#include <string>

namespace gprfwi {

/// Base of every error gprfwi throws on purpose.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A value outside its allowed range, or options that contradict each other.
class InvalidArgument : public Error {
public:
    using Error::Error;
};

/// A file the run reads is missing, not in its format, or holds values
/// gprfwi cannot use (bad input, like a bad run file: exit code 2).
class InputFileError : public InvalidArgument {
public:
    using InvalidArgument::InvalidArgument;
};

/// Arrays whose sizes do not match what the grid or survey implies.
class SizeMismatch : public Error {
public:
    using Error::Error;
};

/// A source or receiver position outside the model.
class PositionOutsideModel : public Error {
public:
    using Error::Error;
};

/// A time step above the CFL limit where sub-stepping is not allowed.
class UnstableTimeStep : public Error {
public:
    using Error::Error;
};

/// NaN or Inf appeared in a wavefield during time stepping.
class NumericalBlowup : public Error {
public:
    using Error::Error;
};

/// The memory a run needs is not available.
class OutOfMemory : public Error {
public:
    using Error::Error;
};

/// A backend that this build does not contain was requested.
class NotCompiled : public Error {
public:
    using Error::Error;
};

/// Whether `e` is a refusal of bad input (a run file, a data or model file,
/// an option): the command line exits with code 2 for these, 1 for others.
inline bool is_input_error(const std::exception& e) {
    return dynamic_cast<const InvalidArgument*>(&e) || dynamic_cast<const SizeMismatch*>(&e) ||
           dynamic_cast<const PositionOutsideModel*>(&e) || dynamic_cast<const UnstableTimeStep*>(&e);
}

}  // namespace gprfwi
