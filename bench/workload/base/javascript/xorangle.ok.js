const readline = require('readline');

const rl = readline.createInterface({ input: process.stdin });

rl.on('line', (line) => {
  const n = parseInt(line.trim(), 10);
  let count = 0;
  for (let a = 1; a <= n; a++) {
    for (let b = a; b <= n; b++) {
      const c = a ^ b;
      if (c >= b && c <= n && a + b > c) {
        count++;
      }
    }
  }
  console.log(count);
  rl.close();
});
