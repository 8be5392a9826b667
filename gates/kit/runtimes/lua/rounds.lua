-- rounds.lua -- Lua under the kit: does memory the program lets go leave
-- the process?
--
-- Three rounds: each makes about FILL_MIB of Lua's objects (a table of
-- three values, one of them a new string, in tables of CHUNK), lets all
-- of them go, collects with collectgarbage("collect") and stops at a
-- checkpoint, round1 ... round3. Lua allocates with the C library's
-- realloc and free; which malloc that is, and how it gives memory back,
-- is the builds file's choice, not this file's (README.md).
--
-- Checkpoint figure: held_kib, collectgarbage("count"): the bytes Lua has
-- allocated and not freed, by its own count, what the kit judges
-- retained-below by.
--
-- Argument "keep" (the gates file's failsafe): one round, never let go.

-- A round, counted at Lua's sizes: far above any cap, small enough that
-- the matrix takes seconds.
local FILL_MIB = 160
-- Objects a table: its array part (16 bytes a slot) is a block of 16 KiB,
-- under glibc's mmap threshold, so it never moves the threshold.
local CHUNK = 1024

-- checkpoint runs the kit's helper (gbgate checkpoint, on PATH) through
-- os.execute and waits for it: the helper prints the line on this
-- process's stdout and stops this process (its shell's parent).
local function checkpoint(name)
  io.stdout:flush()
  local ok = os.execute(string.format("gbgate checkpoint %s held_kib=%d", name,
    math.floor(collectgarbage("count"))))
  if not ok then
    io.stderr:write("rounds.lua: the checkpoint failed\n")
    os.exit(2)
  end
end

-- fill: a table of three values is 56 bytes, its array part 48, the
-- string about 30; with glibc's headers about 160 bytes an object.
local function fill(round)
  local out, chunk = {}, {}
  local n, i, goal = 0, 0, FILL_MIB << 20
  while n < goal do
    i = i + 1
    chunk[#chunk + 1] = { i, round, "s" .. i }
    if #chunk == CHUNK then
      out[#out + 1] = chunk
      chunk = {}
    end
    n = n + 160
  end
  out[#out + 1] = chunk
  return out
end

if #arg > 1 or (#arg == 1 and arg[1] ~= "keep") then
  io.stderr:write("usage: rounds.lua [keep]\n")
  os.exit(2)
end
local keep = arg[1] == "keep"
local kept = {}
for r = 1, keep and 1 or 3 do
  local objs = fill(r)
  if keep then kept[#kept + 1] = objs end
  objs = nil
  collectgarbage("collect")
  checkpoint("round" .. r)
end
