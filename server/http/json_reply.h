// JSON bodies of the dashboard API: protobuf messages in the proto3 JSON mapping (the field names
// of proto/ablate/v1, defaults included, enums by name, 64-bit integers as strings) and errors as
// {"error":{"code":"NOT_FOUND","message":"..."}} with the matching HTTP status.
#ifndef ABLATE_SERVER_HTTP_JSON_REPLY_H_
#define ABLATE_SERVER_HTTP_JSON_REPLY_H_

#include <google/protobuf/message.h>

#include <string>

#include "absl/status/status.h"

namespace ablate {

// The message as JSON with the .proto field names and every field, also those at their default.
std::string ProtoJson(const google::protobuf::Message& message);

// 400 INVALID_ARGUMENT / OUT_OF_RANGE, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 NOT_FOUND,
// 409 FAILED_PRECONDITION / ALREADY_EXISTS / ABORTED, 503 UNAVAILABLE, 500 otherwise.
int HttpStatusOf(absl::StatusCode code);

// {"error":{"code":"<canonical code name>","message":"<message>"}}; `s` must not be OK.
std::string ErrorJson(const absl::Status& s);

// A JSON string literal of `text`, quotes included.
std::string JsonString(std::string_view text);

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_JSON_REPLY_H_
