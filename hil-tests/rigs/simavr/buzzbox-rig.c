/*
 * simavr test rig for the buzz-box firmware.
 *
 *   buzzbox-rig [--link PATH] [--no-throttle] FIRMWARE.elf
 *
 * Runs an ATmega328P at 16 MHz with the given ELF, bridges UART0 to a pseudo-terminal (simavr's
 * uart_pty part) and paces the simulated clock to the wall clock, so board microseconds and host
 * microseconds advance together (simavr alone runs as fast as it can, and jumps over sleep).
 *
 * stdout: machine-readable lines that start with "RIG " (other lines come from simavr itself):
 *   RIG pty <path>                     the board's serial port (the pty slave)
 *   RIG ready                          the firmware is running
 *   RIG pin <lamp|buzzer> <0|1> <t_us> an output pin changed, at board time t_us
 *   RIG contact <0|1> <t_us>           the contact input was set (1 = closed, pin pulled low)
 *   RIG time <t_us> <lag_us>           answer to "time": board time and the worst lag behind the wall clock
 *   RIG error <message>
 * stdin, one command a line:
 *   contact 1 | contact 0              close / open the contact (PD2 low / high)
 *   glitch <us>                        close the contact for <us> board microseconds, then open it
 *   time                               report board time
 *   quit                               exit (end of stdin exits too)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <avr_ioport.h>
#include <sim_avr.h>
#include <sim_elf.h>
#include <sim_irq.h>
#include <sim_cycle_timers.h>
#include <uart_pty.h>

#define F_CPU_HZ 16000000UL
#define CHECK_EVERY_CYCLES (F_CPU_HZ / 10000) /* look at the wall clock every 100 µs of board time */

static avr_t *avr;
static uart_pty_t pty;
static avr_irq_t *contact_irq;
static const char *link_path;
static struct timespec wall_start;
static long long worst_lag_ns;

static unsigned long long board_us(void) { return (unsigned long long)(avr->cycle / (F_CPU_HZ / 1000000UL)); }

static long long wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)(ts.tv_sec - wall_start.tv_sec) * 1000000000LL + (ts.tv_nsec - wall_start.tv_nsec);
}

/* board nanoseconds: cycles × 62.5 ns at 16 MHz */
static long long board_ns(void) { return (long long)(avr->cycle * 1000ULL / (F_CPU_HZ / 1000000UL)); }

static void on_pin(struct avr_irq_t *irq, uint32_t value, void *param) {
  (void)irq;
  printf("RIG pin %s %u %llu\n", (const char *)param, value ? 1u : 0u, board_us());
}

static void set_contact(int closed) {
  avr_raise_irq(contact_irq, closed ? 0 : 1);
  printf("RIG contact %d %llu\n", closed ? 1 : 0, board_us());
}

static avr_cycle_count_t end_glitch(avr_t *a, avr_cycle_count_t when, void *param) {
  (void)a;
  (void)when;
  (void)param;
  set_contact(0);
  return 0;
}

static void handle_command(char *cmd) {
  size_t n = strlen(cmd);
  while (n > 0 && (cmd[n - 1] == '\n' || cmd[n - 1] == '\r' || cmd[n - 1] == ' ')) cmd[--n] = 0;
  if (n == 0) return;
  if (strcmp(cmd, "contact 1") == 0) {
    set_contact(1);
  } else if (strcmp(cmd, "contact 0") == 0) {
    set_contact(0);
  } else if (strncmp(cmd, "glitch ", 7) == 0) {
    long us = strtol(cmd + 7, NULL, 10);
    if (us <= 0) {
      printf("RIG error bad glitch length\n");
      return;
    }
    set_contact(1);
    avr_cycle_timer_register_usec(avr, (uint32_t)us, end_glitch, NULL);
  } else if (strcmp(cmd, "time") == 0) {
    printf("RIG time %llu %lld\n", board_us(), worst_lag_ns / 1000);
  } else if (strcmp(cmd, "quit") == 0) {
    if (link_path) unlink(link_path);
    exit(0);
  } else {
    printf("RIG error unknown command: %s\n", cmd);
  }
}

static char in_buf[256];
static size_t in_len;

/* Wait up to timeout_ns for stdin; run every complete command that arrived. */
static void poll_stdin(long long timeout_ns) {
  struct pollfd pfd = {.fd = 0, .events = POLLIN};
  struct timespec to = {.tv_sec = timeout_ns / 1000000000LL, .tv_nsec = timeout_ns % 1000000000LL};
  int r = ppoll(&pfd, 1, &to, NULL);
  if (r <= 0) return;
  ssize_t got = read(0, in_buf + in_len, sizeof(in_buf) - 1 - in_len);
  if (got <= 0) { /* end of stdin: the test that owns us is gone */
    if (link_path) unlink(link_path);
    exit(0);
  }
  in_len += (size_t)got;
  char *start = in_buf;
  char *nl;
  while ((nl = memchr(start, '\n', in_len - (size_t)(start - in_buf))) != NULL) {
    *nl = 0;
    handle_command(start);
    start = nl + 1;
  }
  in_len -= (size_t)(start - in_buf);
  memmove(in_buf, start, in_len);
  if (in_len == sizeof(in_buf) - 1) in_len = 0; /* overlong junk */
}

/* Sleep requests from the core: pacing is done in the main loop, so don't sleep here. */
static void no_sleep(avr_t *a, avr_cycle_count_t how_long) {
  (void)a;
  (void)how_long;
}

static void on_term(int sig) {
  (void)sig;
  if (link_path) unlink(link_path);
  _exit(0);
}

int main(int argc, char **argv) {
  const char *elf = NULL;
  int throttle = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--link") == 0 && i + 1 < argc)
      link_path = argv[++i];
    else if (strcmp(argv[i], "--no-throttle") == 0)
      throttle = 0;
    else
      elf = argv[i];
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!elf) {
    fprintf(stderr, "usage: %s [--link PATH] [--no-throttle] FIRMWARE.elf\n", argv[0]);
    return 2;
  }
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);

  elf_firmware_t fw;
  memset(&fw, 0, sizeof(fw));
  if (elf_read_firmware(elf, &fw) != 0) {
    printf("RIG error cannot read %s\n", elf);
    return 1;
  }
  avr = avr_make_mcu_by_name("atmega328p");
  if (!avr) {
    printf("RIG error simavr has no atmega328p\n");
    return 1;
  }
  avr_init(avr);
  fw.frequency = F_CPU_HZ;
  avr_load_firmware(avr, &fw);
  avr->frequency = F_CPU_HZ;
  avr->sleep = no_sleep;

  uart_pty_init(avr, &pty);
  uart_pty_connect(&pty, '0');
  printf("RIG pty %s\n", pty.port[0].slavename);
  if (link_path) {
    unlink(link_path);
    if (symlink(pty.port[0].slavename, link_path) != 0) {
      printf("RIG error cannot link %s: %s\n", link_path, strerror(errno));
      return 1;
    }
  }

  avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ('B'), 0), on_pin, "lamp");
  avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ('B'), 1), on_pin, "buzzer");
  contact_irq = avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ('D'), 2);
  avr_raise_irq(contact_irq, 1); /* open: the pull-up holds the pin high */

  printf("RIG ready\n");
  clock_gettime(CLOCK_MONOTONIC, &wall_start);
  avr_cycle_count_t next_check = 0;
  for (;;) {
    int state = avr_run(avr);
    if (state == cpu_Done || state == cpu_Crashed) {
      printf("RIG error firmware stopped (state %d)\n", state);
      break;
    }
    if (avr->cycle < next_check) continue;
    next_check = avr->cycle + CHECK_EVERY_CYCLES;
    long long ahead = throttle ? board_ns() - wall_ns() : 0;
    if (ahead < 0 && -ahead > worst_lag_ns) worst_lag_ns = -ahead;
    poll_stdin(ahead > 0 ? ahead : 0);
  }
  if (link_path) unlink(link_path);
  return 1;
}
