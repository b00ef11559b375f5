/**
 * JavaScript that runs *inside* QuickJS before the user's code, in every fresh
 * context. It is called with two host callbacks (never placed on the global
 * object, so user code cannot reach them) and returns `run`, which:
 * - parses the inputs with the sandbox's own `JSON.parse` (values are data,
 *   never spliced into source);
 * - compiles the user's source with the sandbox's `Function` constructor, so
 *   a syntax error is told apart from an error the code throws;
 * - returns the result as JSON text, refusing functions, symbols, BigInts and
 *   Promises with a message rather than dropping them silently.
 * It also installs `console` (log/info/warn/error/debug) writing to the host.
 * Built-ins are captured up front so user code that redefines them cannot
 * change how inputs are read or results are written.
 */
export const PRELUDE_SOURCE = String.raw`(function (hostLog, hostFail) {
  'use strict';
  const G = globalThis;
  const Fn = Function;
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const toText = String;
  const apply = Reflect.apply;
  const PromiseCtor = Promise;
  const TypeErrorCtor = TypeError;

  const show = (value) => {
    if (typeof value === 'string') return value;
    try {
      const json = stringify(value);
      if (typeof json === 'string') return json;
    } catch (ignored) {}
    try { return toText(value); } catch (ignored) { return '[unprintable value]'; }
  };
  const logger = (level) => function () {
    let text = '';
    for (let i = 0; i < arguments.length; i++) text += (i > 0 ? ' ' : '') + show(arguments[i]);
    hostLog(level, text);
  };
  G.console = { log: logger('log'), info: logger('info'), warn: logger('warn'), error: logger('error'), debug: logger('debug') };

  const describe = (error) => {
    try {
      if (error === null) return ['null', 'null was thrown', ''];
      if (error !== null && (typeof error === 'object' || typeof error === 'function') && 'message' in error) {
        return [toText(error.name), toText(error.message), error.stack === undefined ? '' : toText(error.stack)];
      }
      return ['Error', 'a non-Error value was thrown: ' + show(error), ''];
    } catch (ignored) {
      return ['Error', 'the thrown value could not be described', ''];
    }
  };
  const report = (phase, error) => {
    const described = describe(error);
    hostFail(phase, described[0], described[1], described[2]);
  };

  const where = (key) => (key === '' ? 'the value' : 'property "' + key + '"');
  const replacer = function (key, value) {
    const type = typeof value;
    if (type === 'function') throw new TypeErrorCtor(where(key) + ' is a function');
    if (type === 'symbol') throw new TypeErrorCtor(where(key) + ' is a symbol');
    if (type === 'bigint') throw new TypeErrorCtor(where(key) + ' is a BigInt; convert it with String() or Number()');
    if (value instanceof PromiseCtor) throw new TypeErrorCtor(where(key) + ' is a Promise; async code is not supported, return a plain value');
    return value;
  };

  return function run(mode, source, namesJson, argsJson) {
    let fn;
    let args;
    try {
      const names = parse(namesJson);
      args = parse(argsJson);
      const body = mode === 'expression' ? 'return (\n' + source + '\n);' : source;
      fn = apply(Fn, undefined, names.concat([body]));
    } catch (error) {
      report('syntax', error);
      return undefined;
    }
    let value;
    try {
      value = apply(fn, undefined, args);
    } catch (error) {
      report('runtime', error);
      return undefined;
    }
    if (value === undefined) return undefined;
    try {
      return stringify(value, replacer);
    } catch (error) {
      report('result', error);
      return undefined;
    }
  };
})`;
