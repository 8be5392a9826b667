-- checkpoint.lua -- the kit's protocol from Lua: os.execute runs the
-- helper (gbgate checkpoint, on PATH) through sh -c and waits for it; the
-- helper prints the line on this process's stdout, stops this process (its
-- shell's parent) and returns once it is stopped. Gate it:
--   gbgate run --cap 24MiB --at freed -- lua5.4 checkpoint.lua
local function checkpoint(name, figures)
  local line = "gbgate checkpoint " .. name
  for k, v in pairs(figures or {}) do
    line = line .. " " .. k .. "=" .. tostring(v)
  end
  io.stdout:flush() -- what this program printed goes out before the line
  assert(os.execute(line))
end

local data = string.rep("x", 64 << 20) -- 64 MiB, every page written
checkpoint("held", { bytes = #data })
data = nil
collectgarbage("collect") -- the string's memory goes when it is collected
checkpoint("freed")
