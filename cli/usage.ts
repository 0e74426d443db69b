// A usage mistake the command finds itself, shaped as parseArgs's own errors so that main.ts
// answers both alike: the message, the command's usage line, exit code 2.

export const usageError = (message: string): TypeError =>
  Object.assign(new TypeError(message), { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' });
