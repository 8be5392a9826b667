# checkpoint.rb -- the kit's protocol from Ruby: the helper (gbgate
# checkpoint, on PATH) prints the line on this process's stdout, stops it and
# returns once it is stopped; system waits for it, so nothing runs past the
# line. Gate it: gbgate run --cap 24MiB --at freed -- ruby checkpoint.rb
def checkpoint(name, **figures)
  $stdout.flush # what this program printed goes out before the line
  words = figures.map { |k, v| "#{k}=#{v}" }
  system("gbgate", "checkpoint", name, *words, exception: true)
end

data = "x" * (64 << 20) # 64 MiB, every page written
checkpoint("held", bytes: data.bytesize)
data = nil
GC.start # the string's memory goes when it is collected
checkpoint("freed")
