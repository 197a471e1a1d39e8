process.stdin.resume();
process.stdin.setEncoding('utf8');
let input = '';
process.stdin.on('data', (chunk) => {
  input += chunk;
});
process.stdin.on('end', () => {
  const w = parseInt(input.trim(), 10);
  console.log(w > 2 && w % 2 === 0 ? 'YES' : 'NO');
});
