"""The Redis store's Lua scripts: each write that reads first, atomically.

Used by :mod:`.redis` only; what each does is said beside it.
"""

from typing import Final

from .codec import LAST_VERSION

__all__ = ["APPEND", "PUT", "PUT_APPEND", "READ", "SWEEP_ONE"]

# The scripts' bodies as Lua functions, so one script can run both (put_and_append).
# put(doc, index, expiry, a): a = value, expect, expiry, now, id, expiry in ms.
# Returns {done, version}, or {0, 0, why} for a live hash no writer of ours
# made (its ver or exp no number, ver below 1 or past LAST_VERSION): never
# written over, and no conflict (a caller retries a conflict; expect=0 never
# matches ver 0).
_PUT_FN = (
    """
local function put(dk, nk, xk, a)
  local cur = redis.call('HMGET', dk, 'ver', 'exp')
  local ver = 0
  if cur[1] and redis.call('HEXISTS', dk, 'v') == 1 then
    local exp = false
    if cur[2] and cur[2] ~= '' then
      exp = tonumber(cur[2])
      if not exp then return {0, 0, 'its expiry is not a number'} end
    end
    if not exp or exp > tonumber(a[4]) then
      ver = tonumber(cur[1])
      if not ver or ver ~= math.floor(ver) then
        return {0, 0, 'its version is not a number'}
      end
      if ver < 1 then return {0, 0, 'its version is below 1'} end
      if ver > """
    + str(LAST_VERSION)
    + """ then
        return {0, 0, 'its version is too large to count on'}
      end
    end
  end
  if a[2] ~= '' and tonumber(a[2]) ~= ver then return {0, ver} end
  redis.call('DEL', dk)
  redis.call('HSET', dk, 'v', a[1], 'ver', ver + 1, 'exp', a[3])
  redis.call('SADD', nk, a[5])
  if a[3] == '' then
    redis.call('ZREM', xk, dk)
  else
    redis.call('ZADD', xk, a[3], dk)
    redis.call('PEXPIREAT', dk, a[6])
  end
  return {1, ver + 1}
end
"""
)

# append(stream, expiry, a, from): a[from..] = now, expiry, expiry in ms,
# then the records.
_APPEND_FN = """
local function append(sk, xk, a, from)
  local exp = redis.call('ZSCORE', xk, sk)
  local len = redis.call('XLEN', sk)
  if exp and tonumber(exp) <= tonumber(a[from]) then
    redis.call('DEL', sk)
    redis.call('ZREM', xk, sk)
    len, exp = 0, false
  end
  for i = from + 3, #a do
    redis.call('XADD', sk, '0-' .. (len + i - from - 2), 'r', a[i])
  end
  len = len + #a - from - 2
  if a[from + 1] ~= '' then
    redis.call('ZADD', xk, a[from + 1], sk)
    redis.call('PEXPIREAT', sk, a[from + 2])
  elseif exp then
    redis.call('PEXPIREAT', sk, math.floor(tonumber(exp) * 1000))
  end
  return len
end
"""

PUT: Final = _PUT_FN + "return put(KEYS[1], KEYS[2], KEYS[3], ARGV)"
APPEND: Final = _APPEND_FN + "return append(KEYS[1], KEYS[2], ARGV, 1)"
# KEYS: document, index, expiry, stream; ARGV: put's six, then append's.
PUT_APPEND: Final = (
    _PUT_FN
    + _APPEND_FN
    + """
-- A stream key of another type fails here, before anything is written
-- (a script's writes before an error stay: the document moved on alone).
redis.call('XLEN', KEYS[4])
local done = put(KEYS[1], KEYS[2], KEYS[3], ARGV)
if done[1] == 1 then append(KEYS[4], KEYS[3], ARGV, 7) end
return done
"""
)

READ: Final = """
local exp = redis.call('ZSCORE', KEYS[2], KEYS[1])
if exp and tonumber(exp) <= tonumber(ARGV[1]) then return {} end
local out = {}
for i, entry in ipairs(redis.call('XRANGE', KEYS[1], ARGV[2], '+')) do
  out[i] = entry[2][2]
end
return out
"""

# Delete one key named in the expiry index if it is still expired at ARGV[1]
# (a writer may have renewed it since the index was read).
SWEEP_ONE: Final = """
local exp = redis.call('ZSCORE', KEYS[1], KEYS[2])
if not exp or tonumber(exp) > tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[1], KEYS[2])
if ARGV[2] ~= '' then redis.call('SREM', KEYS[3], ARGV[2]) end
return 1
"""
