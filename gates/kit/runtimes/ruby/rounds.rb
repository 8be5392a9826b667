# rounds.rb -- Ruby under the kit
require 'objspace'
FILL_MIB = 300

def checkpoint(name)
  s = GC.stat
  held = ObjectSpace.memsize_of_all
  args = [name, "held_kib=#{held / 1024}",
          "pages=#{s[:heap_allocated_pages]}", "live_slots=#{s[:heap_live_slots]}",
          "free_slots=#{s[:heap_free_slots]}"]
  $stdout.flush
  unless ENV['GBGATE'] && !ENV['GBGATE'].empty?
    puts args.join(' ')
    return
  end
  system(ENV['GBGATE_HELPER'], *args, exception: true)
end

def fill(round)
  out = []
  n = 0
  goal = FILL_MIB << 20
  i = 0
  while n < goal
    out << [i, round, "x#{i}"]
    n += 120
    i += 1
  end
  out
end

def collect
  prev = nil
  20.times do
    GC.start(full_mark: true, immediate_sweep: true)
    pages = GC.stat(:heap_allocated_pages)
    break if prev && pages >= prev
    prev = pages
  end
end

keep = ARGV == ['keep']
kept = []
(1..(keep ? 1 : 3)).each do |r|
  objs = fill(r)
  kept << objs if keep
  objs = nil
  collect
  checkpoint("round#{r}")
end
