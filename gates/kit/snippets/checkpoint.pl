# checkpoint.pl -- the kit's protocol from Perl: the helper (gbgate
# checkpoint, on PATH) prints the line on this process's stdout, stops it and
# returns once it is stopped; system waits for it, so nothing runs past the
# line. Gate it: gbgate run --cap 24MiB --at freed -- perl checkpoint.pl
use strict;
use warnings;

sub checkpoint {
    my ($name, %figures) = @_;
    $| = 1; # what this program printed goes out before the line
    my @words = map { "$_=$figures{$_}" } sort keys %figures;
    system('gbgate', 'checkpoint', $name, @words) == 0 or die "checkpoint $name failed\n";
}

# The size in a variable: perl folds a constant expression ('x' x (64 << 20))
# when it compiles the program and keeps the folded string for its life.
my $mib = 64;
my $data = 'x' x ($mib << 20); # 64 MiB, every page written
checkpoint('held', bytes => length $data);
undef $data; # the string's buffer goes back to malloc at once
checkpoint('freed');
