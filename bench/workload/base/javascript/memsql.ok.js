const readline = require('readline');
const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
const input = [];

rl.on('line', (line) => input.push(line.trim()));
rl.on('close', () => {
  const days = input[1];
  let sf = 0;
  let fs = 0;
  for (let i = 1; i < days.length; i++) {
    if (days[i - 1] === 'S' && days[i] === 'F') sf++;
    else if (days[i - 1] === 'F' && days[i] === 'S') fs++;
  }
  console.log(sf > fs ? 'YES' : 'NO');
});
