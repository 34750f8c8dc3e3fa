#!/usr/bin/env perl
# Smoke test of the Perl 5 SWIG binding (the raw PolylimitNative module) against
# a real redis-server. Run by tests/java/run.sh:
#   POLYLIMIT_TEST_REDIS_URL=redis://127.0.0.1:PORT perl -I<build>/perl tests/java/perl-smoke.t
use strict;
use warnings;
use Test::More;
use PolylimitNative;

my $url = $ENV{POLYLIMIT_TEST_REDIS_URL} or die "POLYLIMIT_TEST_REDIS_URL is not set\n";
my $OK = $PolylimitNative::POLYLIMIT_OK;
my $EINVALID = $PolylimitNative::POLYLIMIT_EINVALID;

cmp_ok(PolylimitNative::polylimit_version_number(), '>=', $PolylimitNative::POLYLIMIT_VERSION_NUMBER, 'library at least the header version');
is(PolylimitNative::polylimit_status_name($EINVALID), 'POLYLIMIT_EINVALID', 'status names');

my $err = PolylimitNative::polylimit_error->new();
my ($rc, $client) = PolylimitNative::polylimit_client_open($url, undef, $err);
is($rc, $OK, 'client opens') or diag($err->messageBytes());
ok(defined $client, 'client handle returned');

($rc, my $none) = PolylimitNative::polylimit_client_open('nonsense', undef, $err);
is($rc, $EINVALID, 'bad URL is POLYLIMIT_EINVALID');
ok(!defined $none, 'no handle for a bad URL');
is($err->{code}, $EINVALID, 'polylimit_error carries the code');
like($err->messageBytes(), qr/\S/, 'polylimit_error carries a message');

my $opts = PolylimitNative::polylimit_limiter_options->new();
$opts->{limit} = 3;
$opts->{window_ms} = 60000;
is($opts->setPrefix('perl-smoke'), $OK, 'prefix set');
($rc, my $limiter) = PolylimitNative::polylimit_limiter_new($client, $opts, $err);
is($rc, $OK, 'limiter made') or diag($err->messageBytes());

my $key = "key\0with-nul-" . $$ . '-' . time();
my $d = PolylimitNative::polylimit_decision->new();
for my $i (1 .. 3) {
    is(PolylimitNative::polylimit_limiter_check($limiter, $key, 1, $d, $err), $OK, "check $i");
    is($d->{allowed}, 1, "check $i admitted");
    is($d->{remaining}, 3 - $i, "check $i remaining");
}
is(PolylimitNative::polylimit_limiter_check($limiter, $key, 1, $d, $err), $OK, 'fourth check is a result, not an error');
is($d->{allowed}, 0, 'fourth check denied');
cmp_ok($d->{retry_after_ms}, '>', 0, 'denial has a retry-after');
# The HTTP headers come from the core, as in every language.
($rc, my $headers) = PolylimitNative::polylimit_limiter_headers($limiter, $d, $err);
is($rc, $OK, 'headers of a denial');
like($headers, qr/\ARetry-After: [1-9]\d*\nRateLimit-Limit: 3\nRateLimit-Remaining: 0\nRateLimit-Reset: \d+\n/,
     'Retry-After first, then the RateLimit fields');
like($headers, qr/^RateLimit-Policy: "default";q=3;w=60$/m, 'the policy of the limit');

# The NUL is part of the key: the prefix before it is another key.
is(PolylimitNative::polylimit_limiter_check($limiter, "key", 1, $d, $err), $OK, 'key before the NUL');
is($d->{allowed}, 1, 'is a different key');

is(PolylimitNative::polylimit_limiter_check($limiter, $key, 0, $d, $err), $EINVALID, 'cost 0 is POLYLIMIT_EINVALID');
is(PolylimitNative::polylimit_limiter_check($limiter, '', 1, $d, $err), $EINVALID, 'empty key is POLYLIMIT_EINVALID');

is(PolylimitNative::polylimit_limiter_reset($limiter, $key, $err), $OK, 'reset');
is(PolylimitNative::polylimit_limiter_peek($limiter, $key, $d, $err), $OK, 'peek');
is($d->{remaining}, 3, 'full capacity after reset');

# Rate specs are parsed by the core; GCRA with a burst, partial grants, refunds.
my $gopts = PolylimitNative::polylimit_limiter_options->new();
$gopts->{algorithm} = $PolylimitNative::POLYLIMIT_ALG_GCRA;
is($gopts->setPrefix('perl-smoke'), $OK, 'prefix set (GCRA)');
($rc, my $gcra) = PolylimitNative::polylimit_limiter_new_spec($client, '1/min burst 3', $gopts, $err);
is($rc, $OK, 'limiter from a spec') or diag($err->messageBytes());
my $gkey = "gcra-$$-" . time();
is(PolylimitNative::polylimit_limiter_check_at_most($gcra, $gkey, 5, $d, $err), $OK, 'check_at_most');
is($d->{granted}, 3, 'check_at_most granted the burst');
is(PolylimitNative::polylimit_limiter_refund($gcra, $gkey, 1, $d, $err), $OK, 'refund');
is($d->{allowed}, 1, 'one unit back after the refund');
($rc, my $bad) = PolylimitNative::polylimit_limiter_new_spec($client, '100/fortnight', undef, $err);
is($rc, $EINVALID, 'bad spec is POLYLIMIT_EINVALID');
like($err->messageBytes(), qr/fortnight/, "the core's message quotes the bad part");

my $stats = PolylimitNative::polylimit_stats->new();
is(PolylimitNative::polylimit_client_stats($client, $stats, $err), $OK, 'client stats');
cmp_ok($stats->{checks}, '>=', 6, 'stats count the checks');
cmp_ok($stats->latencyLeUs(0), '>', 0, 'latency bucket bounds');
($rc, my $text) = PolylimitNative::polylimit_client_stats_prometheus($client, $err);
is($rc, $OK, 'prometheus text');
like($text, qr/^polylimit_checks_total \d+$/m, 'prometheus text has the counters');

# Client options version 2: a name labels the metrics (the struct owns its copy).
my $nopts = PolylimitNative::polylimit_client_options->new();
is($nopts->setName('perl-smoke'), $OK, 'name set');
($rc, my $named) = PolylimitNative::polylimit_client_open($url, $nopts, $err);
is($rc, $OK, 'named client opens') or diag($err->messageBytes());
($rc, $text) = PolylimitNative::polylimit_client_stats_prometheus($named, $err);
like($text, qr/^polylimit_checks_total\{client="perl-smoke"\} 0$/m, 'samples labelled with the name');
PolylimitNative::polylimit_client_close($named);
is($nopts->setName("a\0b"), $EINVALID, 'a name with a NUL is refused');

# Every range is checked once, in the core, with one message in every language.
my $copts = PolylimitNative::polylimit_client_options->new();
$copts->{pool_size} = 5000;
($rc, my $big) = PolylimitNative::polylimit_client_open($url, $copts, $err);
is($rc, $EINVALID, 'pool_size 5000 is POLYLIMIT_EINVALID');
ok(!defined $big, 'no handle for a bad option');
like($err->messageBytes(), qr/\Qpool_size = 5000 is out of range 1..4096\E/, "the core's message for a bound");
my $dopts = PolylimitNative::polylimit_limiter_options->new();
$dopts->{limit} = 1;
$dopts->{window_ms} = 1000;
$dopts->{deny_cache_size} = 20000000;
($rc, my $none2) = PolylimitNative::polylimit_limiter_new($client, $dopts, $err);
is($rc, $EINVALID, 'deny_cache_size 20000000 is POLYLIMIT_EINVALID');
like($err->messageBytes(), qr/\Qdeny_cache_size = 20000000 is out of range 0..10000000\E/, "the same format for a limiter option");

# Closing the client closes its limiters: their calls fail with POLYLIMIT_ECLOSED,
# and each handle stays valid until it is freed.
PolylimitNative::polylimit_client_close($client);
is(PolylimitNative::polylimit_limiter_check($limiter, $key, 1, $d, $err), $PolylimitNative::POLYLIMIT_ECLOSED,
   'a limiter of a closed client is POLYLIMIT_ECLOSED');
is($err->messageBytes(), 'the client is closed', "the C library's message");
is(PolylimitNative::polylimit_limiter_peek($gcra, $gkey, $d, $err), $PolylimitNative::POLYLIMIT_ECLOSED,
   'every limiter of that client');
PolylimitNative::polylimit_limiter_free($gcra);
PolylimitNative::polylimit_limiter_free($limiter);
done_testing();
